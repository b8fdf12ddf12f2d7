import { createAdyenAdapter } from './adyen';
import { createStripeAdapter } from './stripe';
import type { ProviderAdapter, ProviderName } from './types';

/** The adapter for `settle import --provider`: an export carries no signature (as today's import). */
export function exportAdapter(provider: ProviderName): ProviderAdapter {
  return provider === 'stripe' ? createStripeAdapter({ secrets: [] }) : createAdyenAdapter({ hmacKeys: [] });
}
