/**
 * An HMAC provider's part of settle's configuration, built from its spec's `variables`: the key list
 * (a secret, comma-separated for rotation, with its _FILE form) and, for a scheme that signs it, the
 * notification URL. Pure zod: the configuration reads it without loading the engine.
 */
import type { ConfigIssue } from '../../domain/config-error';
import { httpUrl, secretList, varied, variable, type Variable } from '../../domain/env-variables';
import type { HmacProviderSpec } from './spec';

/**
 * A provider's signing key: at least this many characters (the 16 random bytes of Square's key, in
 * base64), of at least SECRET_MIN_DISTINCT different ones.
 */
export const HMAC_KEY_MIN_CHARACTERS = 22;

const keyList = secretList(
  `each key must be at least ${HMAC_KEY_MIN_CHARACTERS} characters with no space, and not a whsec_ secret (the key from the provider's dashboard)`,
  // A whsec_ value is a Standard Webhooks or Stripe secret pasted in the wrong place.
  (item) =>
    item.length >= HMAC_KEY_MIN_CHARACTERS && !/\s/.test(item) && !item.startsWith('whsec_') && varied(item),
);
/** The notification URL exactly as entered at the provider: https, or http for a loopback stand-in. */
const notificationUrl = httpUrl.optional();

/** The configuration keys of `Name`'s variables: `<name>Keys`, and `<name>NotificationUrl` where signed. */
export type HmacVariablesOf<S extends HmacProviderSpec> = {
  [K in `${S['name']}Keys`]: Variable<typeof keyList>;
} & (S['variables'] extends { notificationUrl: string }
  ? { [K in `${S['name']}NotificationUrl`]: Variable<typeof notificationUrl> }
  : unknown);

/** The configuration key of `spec`'s keys and of its notification URL. */
export function hmacConfigKeys(spec: HmacProviderSpec): { keys: string; notificationUrl: string } {
  return { keys: `${spec.name}Keys`, notificationUrl: `${spec.name}NotificationUrl` };
}

const declared = new WeakMap<HmacProviderSpec, object>();

/**
 * `spec`'s variables, declared as every variable is; the same objects on every call, so the
 * configuration's and the registry's entries of a provider hold the same declarations.
 */
export function hmacVariables<S extends HmacProviderSpec>(spec: S): HmacVariablesOf<S> {
  const known = declared.get(spec);
  if (known) return known as HmacVariablesOf<S>;
  const keys = hmacConfigKeys(spec);
  const variables = {
    [keys.keys]: variable(spec.variables.keys, keyList, { secret: true }),
    ...(spec.variables.notificationUrl
      ? { [keys.notificationUrl]: variable(spec.variables.notificationUrl, notificationUrl) }
      : {}),
  };
  declared.set(spec, variables);
  return variables as HmacVariablesOf<S>;
}

/** `spec`'s variables as the configuration parses them. */
export type HmacConfig = { keys: string[]; notificationUrl?: string };

/** The keys and URL of `spec` out of the whole configuration. */
export function hmacConfigOf(spec: HmacProviderSpec, config: Record<string, unknown>): HmacConfig {
  const keys = hmacConfigKeys(spec);
  return {
    keys: (config[keys.keys] as string[] | undefined) ?? [],
    notificationUrl: config[keys.notificationUrl] as string | undefined,
  };
}

/** Keys of a scheme that signs the notification URL, without the URL: no delivery could verify. */
export function hmacCombinationIssues(
  spec: HmacProviderSpec,
  config: Record<string, unknown>,
): ConfigIssue[] {
  const { keys, notificationUrl: url } = hmacConfigOf(spec, config);
  const variableName = spec.variables.notificationUrl;
  if (spec.signature.content !== '{url}{body}' || keys.length === 0 || url || !variableName) return [];
  return [
    {
      variable: variableName,
      message:
        `is not set, but ${spec.variables.keys} is: ${spec.displayName} signs the notification URL, so set it ` +
        `to the subscription's URL exactly as entered at ${spec.displayName}`,
    },
  ];
}

/** `spec`'s configuration entry (src/providers/registry-configuration.ts): its variables and cross-checks. */
export function hmacConfiguration<S extends HmacProviderSpec>(spec: S) {
  return {
    variables: hmacVariables(spec),
    combinationIssues: (config: Record<string, unknown>) => hmacCombinationIssues(spec, config),
  };
}
