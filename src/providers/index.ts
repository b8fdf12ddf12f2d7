import { createAdyenAdapter } from './adyen';
import { createPaypalAdapter } from './paypal';
import { createStripeAdapter } from './stripe';
import type { ProviderAdapter, ProviderName } from './types';

/** The adapter for `settle import --provider`: an export carries no signature (as today's import). */
export function exportAdapter(provider: ProviderName): ProviderAdapter {
  switch (provider) {
    case 'stripe':
      return createStripeAdapter({ secrets: [] });
    case 'adyen':
      return createAdyenAdapter({ hmacKeys: [] });
    case 'paypal':
      return createPaypalAdapter({});
  }
}
