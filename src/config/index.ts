import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import {
  loadClientConfigProfile,
  toClientOptions,
  type ClientConfigProfile,
  type ConfigDataSource,
} from '@temporalio/envconfig';
import { z } from 'zod';
import { parseDuration } from '../domain/duration';

/** Where settle listens when HOST is unset: this machine only. */
export const DEFAULT_HOST = '127.0.0.1';

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

const booleanFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((value) => value === 'true' || value === '1');

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL');

/** SETTLE_DELIVERY_STUCK_AFTER's default, for code handed no configuration. */
export const DEFAULT_DELIVERY_STUCK_AFTER_MS = 5 * 60_000;

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const ms = parseDuration(value);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be a duration such as 90d, 36h, 30m or 45s' });
        return z.NEVER;
      }
      return ms;
    });

/**
 * Everything settle reads from the environment, parsed once. A bad value stops the process at start
 * with a message naming the variable. Workflow code never imports this module.
 */
const configSchema = z.object({
  /** PostgreSQL connection string. */
  DATABASE_URL: z.string().min(1),
  /**
   * Temporal frontend, host:port: TEMPORAL_ADDRESS, or `address` of the TOML profile. The other
   * TEMPORAL_* variables (namespace, API key, TLS, profile, config file) are Temporal's own
   * environment configuration, read in temporal-profile.ts through @temporalio/envconfig.
   */
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port'),
  /** Temporal namespace the workflows run in (TEMPORAL_NAMESPACE or the profile's `namespace`). */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Task queue shared by the gateway (starts) and the workers (polls). */
  SETTLE_TASK_QUEUE: z.string().min(1).default('settle'),
  /** Interface the gateway and the worker's metrics endpoint listen on; the container image sets 0.0.0.0. */
  HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:-]+$/, 'must be an IP address or a host name, such as 127.0.0.1 or 0.0.0.0')
    .default(DEFAULT_HOST),
  /** Gateway listen port. */
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Standard Webhooks secrets (whsec_<base64>), comma-separated; more than one while rotating. */
  SETTLE_WEBHOOK_SECRETS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((secret) => secret.trim())
        .filter(Boolean),
    )
    .refine((secrets) => secrets.every((secret) => /^whsec_[A-Za-z0-9+/=]{8,}$/.test(secret)), {
      message: 'each secret must look like whsec_<base64>',
    }),
  /** Stripe webhook endpoint signing secrets (whsec_…), comma-separated; more than one while rolling. */
  SETTLE_STRIPE_WEBHOOK_SECRETS: z
    .string()
    .default('')
    .transform(splitList)
    .refine((secrets) => secrets.every((secret) => /^whsec_[A-Za-z0-9+/=]{8,}$/.test(secret)), {
      message: 'each secret must look like whsec_… (the endpoint secret from the Stripe dashboard)',
    }),
  /** Adyen HMAC keys (hex), comma-separated; more than one while rotating. */
  SETTLE_ADYEN_HMAC_KEYS: z
    .string()
    .default('')
    .transform(splitList)
    .refine((keys) => keys.every((key) => /^(?:[0-9A-Fa-f]{2}){16,}$/.test(key)), {
      message: 'each key must be the hexadecimal HMAC key from the Adyen Customer Area',
    }),
  /** Basic auth Adyen must present on /webhooks/adyen, as user:password; unset: none asked. */
  SETTLE_ADYEN_BASIC_AUTH: z
    .string()
    .regex(/^[^:]+:.+$/, 'must be user:password')
    .optional(),
  /** Secret that signs outbound reminder deliveries (whsec_<base64>). */
  SETTLE_OUTBOUND_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/=]{8,}$/, 'must look like whsec_<base64>')
    .optional(),
  /** Bearer token for /reminders and /events. */
  SETTLE_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Carrier API that releases and re-holds shipments. */
  SETTLE_CARRIER_URL: httpUrl.optional(),
  /** ERP API that receives ledger entries. */
  SETTLE_ERP_URL: httpUrl.optional(),
  /** How long a claim is kept: far longer than any provider replay horizon. */
  SETTLE_CLAIM_RETENTION: duration('90d'),
  /** A delivery still retrying this long after it was written is listed as `delivery_stuck`. */
  SETTLE_DELIVERY_STUCK_AFTER: duration('5m'),
  /** Allow reminder targets on private and loopback addresses (development and tests only). */
  SETTLE_ALLOW_PRIVATE_TARGETS: booleanFlag,
  /** Port of `settle worker`'s own /metrics (and /healthz) endpoint; 0 picks a free one. */
  SETTLE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /** Workflow runs a worker keeps in memory between tasks; unset: settle's default (see src/worker/run.ts). */
  SETTLE_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(2).optional(),
});

export type Config = {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Sent as `Authorization: Bearer <key>` on every Temporal call (Temporal Cloud API keys). */
  temporalApiKey?: string;
  /** TLS towards the frontend: `true` with the system's roots, an object for mTLS or a private CA. */
  temporalTls?: TLSConfig | boolean;
  /** Extra gRPC headers (TEMPORAL_GRPC_META_* or the profile's `grpc_meta`). */
  temporalGrpcMeta?: Record<string, string>;
  taskQueue: string;
  /** Unset where a test builds a Config by hand: DEFAULT_HOST. */
  host?: string;
  port: number;
  webhookSecrets: string[];
  /** Provider webhooks (docs/providers.md); optional where tests build a Config by hand. */
  stripeWebhookSecrets?: string[];
  adyenHmacKeys?: string[];
  adyenBasicAuth?: string;
  outboundSecret: string | undefined;
  apiToken: string | undefined;
  carrierUrl: string | undefined;
  erpUrl: string | undefined;
  claimRetentionMs: number;
  /** See SETTLE_DELIVERY_STUCK_AFTER. */
  deliveryStuckAfterMs: number;
  allowPrivateTargets: boolean;
  /** Unset where no worker metrics endpoint is wanted (tests building a Config by hand). */
  metricsPort?: number;
  maxCachedWorkflows?: number;
};

export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(
      `Invalid configuration:\n${issues.map((issue) => `  ${issue.variable}: ${issue.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
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
  // An empty variable is an unset one, for settle's variables and for Temporal's alike.
  const set = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => !!entry[1]),
  );
  let temporal: TemporalSettings;
  if (options.temporal === 'dev-stack') {
    temporal = { address: set.TEMPORAL_ADDRESS, namespace: set.TEMPORAL_NAMESPACE };
  } else {
    temporal = loadTemporalProfile(set);
  }
  const raw: Record<string, string | undefined> = Object.fromEntries(
    Object.keys(configSchema.shape).map((key) => [key, set[key]]),
  );
  raw.TEMPORAL_ADDRESS = temporal.address;
  raw.TEMPORAL_NAMESPACE = temporal.namespace;
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const variable = String(issue.path[0] ?? 'environment');
        const fromProfile = variable.startsWith('TEMPORAL_') && !set[variable] && temporal.profileSource;
        return {
          variable: fromProfile ? `${variable} (or its key in ${temporal.profileSource})` : variable,
          message: issue.message,
        };
      }),
    );
  }
  const c = parsed.data;
  return {
    databaseUrl: c.DATABASE_URL,
    temporalAddress: c.TEMPORAL_ADDRESS,
    temporalNamespace: c.TEMPORAL_NAMESPACE,
    ...(temporal.apiKey === undefined ? {} : { temporalApiKey: temporal.apiKey }),
    ...(temporal.tls === undefined ? {} : { temporalTls: temporal.tls }),
    ...(temporal.grpcMeta === undefined ? {} : { temporalGrpcMeta: temporal.grpcMeta }),
    taskQueue: c.SETTLE_TASK_QUEUE,
    host: c.HOST,
    port: c.PORT,
    webhookSecrets: c.SETTLE_WEBHOOK_SECRETS,
    stripeWebhookSecrets: c.SETTLE_STRIPE_WEBHOOK_SECRETS,
    adyenHmacKeys: c.SETTLE_ADYEN_HMAC_KEYS,
    adyenBasicAuth: c.SETTLE_ADYEN_BASIC_AUTH,
    outboundSecret: c.SETTLE_OUTBOUND_SECRET,
    apiToken: c.SETTLE_API_TOKEN,
    carrierUrl: c.SETTLE_CARRIER_URL,
    erpUrl: c.SETTLE_ERP_URL,
    claimRetentionMs: c.SETTLE_CLAIM_RETENTION,
    deliveryStuckAfterMs: c.SETTLE_DELIVERY_STUCK_AFTER,
    allowPrivateTargets: c.SETTLE_ALLOW_PRIVATE_TARGETS,
    metricsPort: c.SETTLE_METRICS_PORT,
    maxCachedWorkflows: c.SETTLE_MAX_CACHED_WORKFLOWS,
  };
}

/** What Temporal's environment configuration resolved to, before settle's own checks. */
type TemporalSettings = {
  address?: string;
  namespace?: string;
  apiKey?: string;
  tls?: TLSConfig | boolean;
  grpcMeta?: Record<string, string>;
  /** The TOML file a profile was read from, named in messages about its keys. */
  profileSource?: string;
};

const TEMPORAL_FLAG_VALUES = ['true', 'false', '1', '0'];

/** Temporal's default config file location on Linux (what the Temporal CLI and SDKs read). */
function defaultTemporalConfigFile(env: Record<string, string>): string | undefined {
  const configHome =
    env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : env.HOME
        ? join(env.HOME, '.config')
        : undefined;
  return configHome ? join(configHome, 'temporalio', 'temporal.toml') : undefined;
}

/**
 * Temporal's own environment configuration (@temporalio/envconfig, as the Temporal CLI reads it):
 * the profile TEMPORAL_PROFILE (default `default`) of the TOML file TEMPORAL_CONFIG_FILE (default
 * ~/.config/temporalio/temporal.toml, if present), each key overridden by its variable:
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH
 * / _DATA, TEMPORAL_TLS_CLIENT_KEY_PATH / _DATA, TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA,
 * TEMPORAL_TLS_SERVER_NAME, TEMPORAL_GRPC_META_<header>. Certificates and keys are read and parsed
 * here, so a missing file or a bad PEM stops the process at start naming its variable.
 */
function loadTemporalProfile(env: Record<string, string>): TemporalSettings {
  const issues: { variable: string; message: string }[] = [];
  for (const variable of ['TEMPORAL_TLS', 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION']) {
    if (env[variable] !== undefined && !TEMPORAL_FLAG_VALUES.includes(env[variable])) {
      issues.push({ variable, message: 'must be true or false' });
    }
  }
  if (
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === 'true' ||
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === '1'
  ) {
    issues.push({
      variable: 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      message:
        "is not supported by Temporal's TypeScript SDK, which settle runs on: set TEMPORAL_TLS_SERVER_NAME " +
        "to a name in the server's certificate instead",
    });
  }
  if (env.TEMPORAL_CONFIG_FILE && !existsSync(env.TEMPORAL_CONFIG_FILE)) {
    issues.push({ variable: 'TEMPORAL_CONFIG_FILE', message: `${env.TEMPORAL_CONFIG_FILE} does not exist` });
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const defaultFile = defaultTemporalConfigFile(env);
  const file = env.TEMPORAL_CONFIG_FILE ?? (defaultFile && existsSync(defaultFile) ? defaultFile : undefined);
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: env });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/^Profile '.*' not found/.test(message)) {
      throw new ConfigError([
        {
          variable: 'TEMPORAL_PROFILE',
          message: `no profile "${env.TEMPORAL_PROFILE}" in ${file ?? 'any config file (set TEMPORAL_CONFIG_FILE)'}`,
        },
      ]);
    }
    const both = /Cannot specify both (\w+)_path and \w+_data/.exec(message);
    if (both) {
      const variable = `TEMPORAL_TLS_${both[1]!.toUpperCase()}`;
      throw new ConfigError([
        {
          variable: `${variable}_PATH`,
          message: `set either ${variable}_PATH or ${variable}_DATA (or the profile's ${both[1]}_path or _data), not both`,
        },
      ]);
    }
    throw new ConfigError([
      {
        variable: env.TEMPORAL_CONFIG_FILE ? 'TEMPORAL_CONFIG_FILE' : 'TEMPORAL_PROFILE',
        message: `${file ?? 'the config file'}: ${message}`,
      },
    ]);
  }

  const tls = profile.tls;
  if (tls && tls.disabled !== true) {
    const where = (variable: string, tomlKey: string, kind: 'PATH' | 'DATA') =>
      env[`${variable}_${kind}`] !== undefined
        ? `${variable}_${kind}`
        : `${variable}_${kind} (the profile's ${tomlKey}_${kind.toLowerCase()} in ${file})`;
    const check = (
      source: ConfigDataSource | undefined,
      variable: string,
      tomlKey: string,
      parse: (pem: Buffer) => unknown,
      what: string,
    ) => {
      if (!source) return;
      const name = where(variable, tomlKey, 'path' in source ? 'PATH' : 'DATA');
      let bytes: Buffer;
      try {
        bytes = 'path' in source ? readFileSync(source.path) : Buffer.from(source.data);
      } catch (error) {
        issues.push({
          variable: name,
          message: `cannot read ${'path' in source ? source.path : 'it'}: ${(error as Error).message}`,
        });
        return;
      }
      try {
        parse(bytes);
      } catch {
        issues.push({ variable: name, message: `is not a PEM ${what}` });
      }
    };
    check(
      tls.clientCert,
      'TEMPORAL_TLS_CLIENT_CERT',
      'client_cert',
      (pem) => new X509Certificate(pem),
      'certificate',
    );
    check(
      tls.clientKey,
      'TEMPORAL_TLS_CLIENT_KEY',
      'client_key',
      (pem) => createPrivateKey(pem),
      'private key',
    );
    check(
      tls.serverCACert,
      'TEMPORAL_TLS_SERVER_CA_CERT',
      'server_ca_cert',
      (pem) => new X509Certificate(pem),
      'certificate',
    );
    if (!tls.clientCert !== !tls.clientKey) {
      issues.push({
        variable: tls.clientCert ? 'TEMPORAL_TLS_CLIENT_KEY_PATH' : 'TEMPORAL_TLS_CLIENT_CERT_PATH',
        message:
          'a client certificate needs its private key and the key its certificate: set both (path or data)',
      });
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);

  // The SDK's own mapping: an API key turns TLS on unless TLS is explicitly disabled.
  const { connectionOptions, namespace } = toClientOptions(profile);
  return {
    address: connectionOptions.address,
    namespace,
    apiKey: typeof connectionOptions.apiKey === 'string' ? connectionOptions.apiKey : undefined,
    tls: connectionOptions.tls ?? undefined,
    grpcMeta: profile.grpcMeta,
    profileSource: file,
  };
}

/**
 * The provider secrets alone (for `settle simulate --provider`, which needs no database); same rules
 * and messages as loadConfig.
 */
export function loadProviderSecrets(
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, 'stripeWebhookSecrets' | 'adyenHmacKeys' | 'adyenBasicAuth'> {
  const schema = configSchema.pick({
    SETTLE_STRIPE_WEBHOOK_SECRETS: true,
    SETTLE_ADYEN_HMAC_KEYS: true,
    SETTLE_ADYEN_BASIC_AUTH: true,
  });
  const raw = Object.fromEntries(
    Object.keys(schema.shape).map((key) => [key, env[key] === '' ? undefined : env[key]]),
  );
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? 'environment'),
        message: issue.message,
      })),
    );
  }
  return {
    stripeWebhookSecrets: parsed.data.SETTLE_STRIPE_WEBHOOK_SECRETS,
    adyenHmacKeys: parsed.data.SETTLE_ADYEN_HMAC_KEYS,
    adyenBasicAuth: parsed.data.SETTLE_ADYEN_BASIC_AUTH,
  };
}
