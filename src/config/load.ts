import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ConfigError } from './error';
import { isExampleSecret } from './example-secrets';
import {
  configVariables,
  objectSchema,
  settingsVariables,
  type Config,
  type Settings,
  type Variable,
} from './schema';
import { loadTemporalProfile, type TemporalSettings } from './temporal-profile';
import { providerCombinationIssues, PROVIDER_VARIABLES } from '../providers/registry-configuration';
import { REMINDER_SECRET_VARIABLE, TARGET_SECRET_KEYS, type SigningSecrets } from '../domain/outbox';

type Variables = Record<string, Variable>;
type Parsed<V extends Variables> = { [K in keyof V]: z.output<V[K]['schema']> };

/** An empty variable is an unset one, for settle's variables and for Temporal's alike. */
function setOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => !!entry[1]));
}

/** The variable naming a file that holds a secret variable's value: `<NAME>_FILE`. */
export function secretFileVariable(name: string): string {
  return `${name}_FILE`;
}

type Sources = {
  /** The variables' values, each secret read from its file where <NAME>_FILE is set. */
  set: Record<string, string>;
  /** How a message names a variable: `NAME_FILE (path)` for one read from a file. */
  describe: (name: string) => string;
  /** The variables whose file was empty (so unset): a required one is named as such. */
  emptyFiles: Set<string>;
  /** The variables whose <NAME>_FILE could not be used, with the issue naming it. */
  fileProblems: Map<string, { variable: string; message: string }>;
};

const noFiles = (set: Record<string, string>): Sources => ({
  set,
  describe: (name) => name,
  emptyFiles: new Set(),
  fileProblems: new Map(),
});

/**
 * Every secret variable of `variables` given as <NAME>_FILE: the file's content (trimmed) in place of
 * the variable's, so it is parsed, and a bad one named, as the variable's would be. An empty file is
 * an unset variable, as an empty variable is (a mounted Secret may hold an empty key). Both set, or a
 * file that cannot be read, is an issue naming <NAME>_FILE (parseVariables reports it in place of the
 * variable's own); no message prints the content.
 */
function withSecretFiles(variables: Variables, set: Record<string, string>): Sources {
  const resolved = { ...set };
  const files = new Map<string, string>();
  const emptyFiles = new Set<string>();
  const fileProblems: Sources['fileProblems'] = new Map();
  for (const v of Object.values(variables).filter((v) => v.secret)) {
    const fileVariable = secretFileVariable(v.name);
    const file = set[fileVariable];
    if (!file) continue;
    if (set[v.name]) {
      const message = `is set together with ${v.name}: set one of them`;
      fileProblems.set(v.name, { variable: fileVariable, message });
      continue;
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      fileProblems.set(v.name, { variable: fileVariable, message: `cannot be read: ${code} (${file})` });
      delete resolved[v.name];
      continue;
    }
    files.set(v.name, file);
    if (text.trim()) resolved[v.name] = text.trim();
    else emptyFiles.add(v.name);
  }
  return {
    set: resolved,
    emptyFiles,
    fileProblems,
    describe: (name) => (files.has(name) ? `${secretFileVariable(name)} (${files.get(name)})` : name),
  };
}

const EXAMPLE_MESSAGE =
  'is an example value published with settle (.env.example, README or docs), known to anyone: generate a secret of your own';

/**
 * Parses `variables` from `set` (defaults applied); throws ConfigError naming every bad variable: a
 * <NAME>_FILE that could not be used, else a published example, else the first rule it breaks.
 */
function parseVariables<V extends Variables>(
  variables: V,
  set: Record<string, string>,
  sources: Pick<Sources, 'describe' | 'emptyFiles' | 'fileProblems'> = noFiles(set),
): Parsed<V> {
  const raw = Object.fromEntries(
    Object.entries(variables).map(([key, v]) => [key, set[v.name] ?? v.default]),
  );
  const name = (key: string) => variables[key]?.name ?? 'environment';
  // One issue per variable.
  const issues = new Map<string, { variable: string; message: string }>();
  for (const [key, v] of Object.entries(variables)) {
    const fileProblem = sources.fileProblems.get(v.name);
    if (fileProblem) issues.set(key, fileProblem);
    else if (v.secret && raw[key] !== undefined && isExampleSecret(raw[key])) {
      issues.set(key, { variable: sources.describe(v.name), message: EXAMPLE_MESSAGE });
    }
  }
  const parsed = objectSchema(variables).safeParse(raw);
  if (parsed.success && issues.size === 0) return parsed.data as Parsed<V>;
  for (const issue of parsed.error?.issues ?? []) {
    const key = String(issue.path[0]);
    if (issues.has(key)) continue;
    const unset = sources.emptyFiles.has(name(key)) ? 'is an empty file' : 'is not set';
    issues.set(key, {
      variable: sources.describe(name(key)),
      message: raw[key] === undefined ? unset : issue.message,
    });
  }
  throw new ConfigError([...issues.values()]);
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
  const keys = withSecretFiles(configVariables, set);
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
    parseVariables(configVariables, resolved, {
      ...keys,
      describe: (name) =>
        name.startsWith('TEMPORAL_') && !set[name] && temporal.profileSource
          ? `${name} (or its key in ${temporal.profileSource})`
          : keys.describe(name),
    }),
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
  config: SigningSecrets & Partial<Pick<Config, keyof typeof PROVIDER_VARIABLES | 'providerMode'>>,
): ConfigError['issues'] {
  const issues: ConfigError['issues'] = [];
  // Every customer verifying a reminder holds SETTLE_REMINDER_SECRET: shared with the carrier's or the
  // ERP's, it would let any of them sign a call that releases a shipment or posts a ledger entry.
  const trusted = new Map<string, string>();
  for (const key of ['outboundSecret', ...TARGET_SECRET_KEYS] as const) {
    for (const secret of config[key] ?? []) trusted.set(secret, configVariables[key].name);
  }
  const shared = (config.reminderSecret ?? []).map((secret) => trusted.get(secret)).filter(Boolean);
  if (shared.length > 0) {
    issues.push({
      variable: REMINDER_SECRET_VARIABLE,
      message:
        `shares a secret with ${[...new Set(shared)].join(' and ')}: every customer holds the reminders' ` +
        'secret, so it must be one of its own (generate one)',
    });
  }
  // Each provider's own (src/providers/<name>/config.ts), on its variables at their defaults where unset.
  issues.push(...providerCombinationIssues(withProviderDefaults(config)));
  return issues;
}

/** The providers' part of the configuration: every provider's variables and SETTLE_PROVIDER_MODE. */
export type ProviderSettings = Pick<Config, keyof typeof PROVIDER_VARIABLES> &
  Partial<Pick<Config, 'providerMode'>>;

/**
 * Every provider's variables as `config` sets them, at their defaults where it leaves them unset:
 * what each provider module's hooks read (src/providers/module.ts), whatever part of the
 * configuration a caller holds.
 */
export function withProviderDefaults(
  config: Partial<Pick<Config, keyof typeof PROVIDER_VARIABLES | 'providerMode'>>,
): ProviderSettings {
  const set = Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined));
  return { ...PROVIDER_DEFAULTS, ...set } as ProviderSettings;
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
  const sources = withSecretFiles(variables, setOnly(env));
  return parseVariables(variables, sources.set, sources) as Pick<Config, K>;
}

/** Each variable's default, parsed: for code handed no configuration (tools, tests). */
export const CONFIG_DEFAULTS = Object.fromEntries(
  Object.entries(configVariables)
    .filter(([, v]) => v.default !== undefined)
    .map(([key, v]) => [key, v.schema.parse(v.default)]),
) as Partial<Config>;

/** Where settle listens when HOST is unset: this machine only. */
export const DEFAULT_HOST = CONFIG_DEFAULTS.host!;

/** Every provider's variables at their defaults, for a check handed only some of them. */
const PROVIDER_DEFAULTS = parseVariables(PROVIDER_VARIABLES, {}, noFiles({}));

/** SETTLE_DELIVERY_STUCK_AFTER's default, for code handed no configuration. */
export const DEFAULT_DELIVERY_STUCK_AFTER_MS = CONFIG_DEFAULTS.deliveryStuckAfterMs!;
