import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ConfigError } from './error';
import {
  configVariables,
  objectSchema,
  settingsVariables,
  type Config,
  type Settings,
  type Variable,
} from './schema';
import { loadTemporalProfile, type TemporalSettings } from './temporal-profile';

type Variables = Record<string, Variable>;
type Parsed<V extends Variables> = { [K in keyof V]: z.output<V[K]['schema']> };

/** An empty variable is an unset one, for settle's variables and for Temporal's alike. */
function setOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => !!entry[1]));
}

/**
 * SETTLE_PAYLOAD_KEYS_FILE's content in place of SETTLE_PAYLOAD_KEYS, so that the file's keys are
 * parsed, and a bad one named, as the variable's would be. Both set, or a file that cannot be read,
 * is a ConfigError naming the file variable.
 */
function withPayloadKeysFile(set: Record<string, string>): {
  set: Record<string, string>;
  describe: (name: string) => string;
} {
  const file = set.SETTLE_PAYLOAD_KEYS_FILE;
  if (!file) return { set, describe: (name) => name };
  const problem = (message: string) => new ConfigError([{ variable: 'SETTLE_PAYLOAD_KEYS_FILE', message }]);
  if (set.SETTLE_PAYLOAD_KEYS) throw problem('is set together with SETTLE_PAYLOAD_KEYS: set one of them');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw problem(`cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)} (${file})`);
  }
  return {
    set: { ...set, SETTLE_PAYLOAD_KEYS: text.trim() || ' ' },
    describe: (name) => (name === 'SETTLE_PAYLOAD_KEYS' ? `SETTLE_PAYLOAD_KEYS_FILE (${file})` : name),
  };
}

/** Parses `variables` from `set` (defaults applied); throws ConfigError naming every bad variable. */
function parseVariables<V extends Variables>(
  variables: V,
  set: Record<string, string>,
  describe: (name: string) => string = (name) => name,
): Parsed<V> {
  const raw = Object.fromEntries(
    Object.entries(variables).map(([key, v]) => [key, set[v.name] ?? v.default]),
  );
  const parsed = objectSchema(variables).safeParse(raw);
  if (parsed.success) return parsed.data as Parsed<V>;
  // One message per variable: the first rule it breaks.
  const issues = new Map<string, string>();
  for (const issue of parsed.error.issues) {
    const key = String(issue.path[0]);
    if (issues.has(key)) continue;
    issues.set(key, raw[key] === undefined ? 'is not set' : issue.message);
  }
  throw new ConfigError(
    [...issues].map(([key, message]) => ({
      variable: describe(variables[key]?.name ?? 'environment'),
      message,
    })),
  );
}

/**
 * The process settings (log level and file, `.settle/`'s place, the Temporal binaries, `settle
 * start`'s ports, the gateway URL): none is required, so they parse before anything else, wherever
 * needed. A bad value throws ConfigError naming the variable.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  return parseVariables(settingsVariables, setOnly(env));
}

/**
 * Parses the environment; throws ConfigError naming every bad variable. `temporal: 'dev-stack'` is for
 * settle's own dev server (`settle start`, or a command finding it running): plain address and
 * namespace only, no TOML profile, TLS or API key.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  options: { temporal?: 'environment' | 'dev-stack' } = {},
): Config {
  const set = setOnly(env);
  const temporal: TemporalSettings =
    options.temporal === 'dev-stack'
      ? { address: set.TEMPORAL_ADDRESS, namespace: set.TEMPORAL_NAMESPACE }
      : loadTemporalProfile(set);
  const issues: ConfigError['issues'] = [];
  const collect = <T>(parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      issues.push(...error.issues);
      return undefined;
    }
  };
  const keys = collect(() => withPayloadKeysFile(set)) ?? { set, describe: (name: string) => name };
  // Temporal's own configuration decides address and namespace (a variable, or the profile's key).
  const resolved = { ...keys.set };
  for (const [variable, value] of [
    ['TEMPORAL_ADDRESS', temporal.address],
    ['TEMPORAL_NAMESPACE', temporal.namespace],
  ] as const) {
    if (value) resolved[variable] = value;
    else delete resolved[variable];
  }
  // The process settings are checked here too, so one message names every bad variable.
  collect(() => parseVariables(settingsVariables, set));
  const config = collect(() =>
    parseVariables(configVariables, resolved, (name) =>
      name.startsWith('TEMPORAL_') && !set[name] && temporal.profileSource
        ? `${name} (or its key in ${temporal.profileSource})`
        : keys.describe(name),
    ),
  );
  if (config) issues.push(...combinationIssues(config));
  if (!config || issues.length > 0) throw new ConfigError(issues);
  return {
    ...config,
    ...(temporal.apiKey === undefined ? {} : { temporalApiKey: temporal.apiKey }),
    ...(temporal.tls === undefined ? {} : { temporalTls: temporal.tls }),
    ...(temporal.grpcMeta === undefined ? {} : { temporalGrpcMeta: temporal.grpcMeta }),
  };
}

/**
 * Variables each valid alone that settle refuses together, each named with what to set. loadConfig
 * applies it; so does the gateway's start, for a configuration built by other means.
 */
export function combinationIssues(
  config: Pick<Config, 'adyenHmacKeys' | 'adyenBasicAuth' | 'adyenAllowNoBasicAuth'>,
): ConfigError['issues'] {
  const issues: ConfigError['issues'] = [];
  // The HMAC covers only some fields of an item, and none of the batch: basic auth keeps everyone
  // but Adyen from sending at all, so going without it is an operator's explicit choice.
  if (config.adyenHmacKeys.length > 0 && !config.adyenBasicAuth && !config.adyenAllowNoBasicAuth) {
    issues.push({
      variable: 'SETTLE_ADYEN_BASIC_AUTH',
      message:
        'is not set, but SETTLE_ADYEN_HMAC_KEYS is: set it to the user:password of the Adyen webhook ' +
        '(docs/providers.md), or SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH=true to take notifications on their HMAC alone',
    });
  }
  return issues;
}

/**
 * Some of the configuration alone, same rules and messages as loadConfig: for a command that needs
 * no database or Temporal (`settle simulate` signing as a provider).
 */
export function loadConfigPart<K extends keyof typeof configVariables>(
  keys: readonly K[],
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, K> {
  const variables = Object.fromEntries(keys.map((key) => [key, configVariables[key]])) as Pick<
    typeof configVariables,
    K
  >;
  const { set, describe } = withPayloadKeysFile(setOnly(env));
  return parseVariables(variables, set, describe) as Pick<Config, K>;
}

/** Each variable's default, parsed: for code handed no configuration (tools, tests). */
export const CONFIG_DEFAULTS = Object.fromEntries(
  Object.entries(configVariables)
    .filter(([, v]) => v.default !== undefined)
    .map(([key, v]) => [key, v.schema.parse(v.default)]),
) as Partial<Config>;

/** Where settle listens when HOST is unset: this machine only. */
export const DEFAULT_HOST = CONFIG_DEFAULTS.host!;

/** SETTLE_DELIVERY_STUCK_AFTER's default, for code handed no configuration. */
export const DEFAULT_DELIVERY_STUCK_AFTER_MS = CONFIG_DEFAULTS.deliveryStuckAfterMs!;
