/**
 * The providers' table (docs/providers.md, "The providers' table"): one module per provider, each in
 * its folder. Every surface iterates it: the gateway's routes and their start-up check, /openapi.json,
 * metrics labels, `settle import`, `settle simulate`, `settle recover`, the recovery Schedules, the
 * database's checks on the provider columns, and the deploy-wiring test; the configuration reads each
 * provider's variables through registry-configuration.ts, which loads no adapter.
 */
import type { ProviderModule } from './module';
import type { PROVIDER_CONFIGURATION } from './registry-configuration';
import { adyen } from './adyen';
import { mapHmacProviders, type HmacProviderSpecs } from './hmac-providers';
import { hmacProvider } from './hmac/provider';
import { paypal } from './paypal';
import { stripe } from './stripe';

/**
 * The HMAC providers (hmac-providers.ts), each module built from its spec, with its variables built
 * from the same spec as its configuration entry: the registry's test holds them to being the same.
 */
const HMAC_PROVIDERS = mapHmacProviders<{
  [Name in keyof HmacProviderSpecs]: ReturnType<typeof hmacProvider<HmacProviderSpecs[Name]>>;
}>(hmacProvider);

export const PROVIDERS = { stripe, adyen, paypal, ...HMAC_PROVIDERS } satisfies Record<
  string,
  ProviderModule
> &
  Record<keyof typeof PROVIDER_CONFIGURATION, ProviderModule>;

/** A provider's name: its key in the table. */
export type ProviderName = keyof typeof PROVIDERS;

/** Every provider's name, in the table's order. */
export const PROVIDER_NAMES = Object.keys(PROVIDERS) as ProviderName[];

/** Every provider's module, widened to the module shape. */
export const PROVIDER_MODULES: readonly ProviderModule[] = Object.values(PROVIDERS);

export function isProviderName(name: unknown): name is ProviderName {
  return typeof name === 'string' && Object.hasOwn(PROVIDERS, name);
}

/** The providers with an events API: the recovery sweep and `settle recover` read them. */
export const RECOVERY_PROVIDER_NAMES = PROVIDER_NAMES.filter(
  (name) => PROVIDERS[name].recovery !== undefined,
);

export { PROVIDER_VARIABLES } from './registry-configuration';
