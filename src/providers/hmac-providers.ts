/**
 * The providers of the HMAC kind (src/providers/hmac): each one entry, its spec, from which the
 * configuration (registry-configuration.ts) and the registry (registry.ts) build its variables and its module.
 * Specs are data: loading this file loads no adapter.
 */
import { CHECKOUT_SPEC } from './checkout/spec';
import type { HmacProviderSpec } from './hmac/spec';
import { SQUARE_SPEC } from './square/spec';

export const HMAC_PROVIDER_SPECS = {
  checkout: CHECKOUT_SPEC,
  square: SQUARE_SPEC,
} as const satisfies { [Name in string]: HmacProviderSpec<Name> };

export type HmacProviderSpecs = typeof HMAC_PROVIDER_SPECS;

/** Each HMAC provider's entry mapped through `build`, keyed and typed by its name. */
export function mapHmacProviders<R extends { [Name in keyof HmacProviderSpecs]: unknown }>(
  build: (spec: HmacProviderSpecs[keyof HmacProviderSpecs]) => unknown,
): R {
  return Object.fromEntries(
    Object.entries(HMAC_PROVIDER_SPECS).map(([name, spec]) => [name, build(spec)]),
  ) as R;
}
