/**
 * Each provider's part of settle's configuration: its variables and their cross-checks, from its
 * folder's config.ts. The one piece of the providers' table the configuration (src/config/, the
 * floor) reads, so it imports nothing but those files: loading the configuration loads no adapter.
 * The registry (registry.ts) holds the same providers, each module built on its entry here; a
 * provider missing from either fails the type check there.
 */
import type { ConfigIssue } from '../domain/config-error';
import { adyenCombinationIssues, adyenVariables } from './adyen/config';
import { mapHmacProviders, type HmacProviderSpecs } from './hmac-providers';
import { hmacConfiguration } from './hmac/config';
import { paypalCombinationIssues, paypalVariables } from './paypal/config';
import { stripeCombinationIssues, stripeVariables } from './stripe/config';

/** Each HMAC provider's configuration, built from its spec (hmac-providers.ts): no entry of its own here. */
const HMAC_CONFIGURATION = mapHmacProviders<{
  [Name in keyof HmacProviderSpecs]: ReturnType<typeof hmacConfiguration<HmacProviderSpecs[Name]>>;
}>(hmacConfiguration);

export const PROVIDER_CONFIGURATION = {
  stripe: { variables: stripeVariables, combinationIssues: stripeCombinationIssues },
  adyen: { variables: adyenVariables, combinationIssues: adyenCombinationIssues },
  paypal: { variables: paypalVariables, combinationIssues: paypalCombinationIssues },
  ...HMAC_CONFIGURATION,
};

type Intersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void
  ? I
  : never;

/** Every provider's variables, one object: src/config/schema.ts spreads them into settle's. */
export const PROVIDER_VARIABLES = Object.assign(
  {},
  ...Object.values(PROVIDER_CONFIGURATION).map((entry) => entry.variables),
) as Intersection<(typeof PROVIDER_CONFIGURATION)[keyof typeof PROVIDER_CONFIGURATION]['variables']>;

/**
 * Every provider's variables each valid alone that settle refuses together. `config` holds each
 * provider's variables (at their defaults where unset) and SETTLE_PROVIDER_MODE.
 */
export function providerCombinationIssues(config: Record<string, unknown>): ConfigIssue[] {
  return Object.values(PROVIDER_CONFIGURATION).flatMap((entry) =>
    (entry.combinationIssues as (config: Record<string, unknown>) => ConfigIssue[])(config),
  );
}
