import type { TLSConfig } from '@temporalio/client';
import { z } from 'zod';
import { parseDuration } from '../domain/duration';
import { parsePayloadKeys } from './payload-keys';

// Every environment variable settle reads is declared here, once; the `Config` and `Settings` types
// are inferred from these declarations. A new variable is one entry below, plus its row in the
// README's configuration table and its line in .env.example (test/unit/config.test.ts checks both).

/**
 * One environment variable: its name, the zod schema its text is parsed with, and the default
 * applied when it is unset or empty, written as a person would set it (so the README and
 * .env.example can show it as is).
 */
export type Variable<S extends z.ZodType = z.ZodType> = {
  name: string;
  schema: S;
  default?: string;
  /** Set by the operating system, not by an operator: named in the README, not in .env.example. */
  system?: boolean;
};

function variable<S extends z.ZodType>(
  name: string,
  schema: S,
  options: { default?: string; system?: boolean } = {},
): Variable<S> {
  return { name, schema, ...options };
}

const secretList = (message: string, pattern: RegExp) =>
  z
    .string()
    .optional()
    .transform((value) =>
      (value ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .refine((items) => items.every((item) => pattern.test(item)), { message });

const WHSEC = /^whsec_[A-Za-z0-9+/=]{8,}$/;

const booleanFlag = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL');

const port = (min: number) =>
  z.coerce
    .number({ message: 'must be a port number' })
    .int('must be a port number')
    .min(min, 'must be a port number')
    .max(65535, 'must be a port number');

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 90d, 36h, 30m or 45s' });
    return z.NEVER;
  }
  return ms;
});

/** A duration of at least one second: a listener's timeout of 0 would mean none. */
const timeout = duration.refine((ms) => ms >= 1000, 'must be at least 1s');

const payloadKeys = z.string().transform((value, ctx) => {
  const parsed = parsePayloadKeys(value);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return parsed.keys;
});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const TEMPORAL_LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

/**
 * What every settle process reads before anything else (the logger, the `.settle/` folder, the
 * Temporal binaries, `settle start`'s ports): nothing here is required, so it parses anywhere.
 */
export const settingsVariables = {
  /** Level of settle's JSON logs. */
  logLevel: variable(
    'SETTLE_LOG_LEVEL',
    z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` }),
    {
      default: 'info',
    },
  ),
  /** Logs are appended to this file (synchronously, whole lines) instead of written to stdout. */
  logFile: variable('SETTLE_LOG_FILE', z.string().optional()),
  /** Level of the Temporal SDK's own logs, forwarded through settle's logger. */
  temporalLogLevel: variable(
    'SETTLE_TEMPORAL_LOG_LEVEL',
    z
      .string()
      .transform((value) => value.toUpperCase())
      .pipe(z.enum(TEMPORAL_LOG_LEVELS, { message: `must be one of ${TEMPORAL_LOG_LEVELS.join(', ')}` })),
    { default: 'WARN' },
  ),
  /** Where `.settle/` (the one-machine stack's data, state and caches) lives; unset: in the working folder. */
  home: variable('SETTLE_HOME', z.string().optional()),
  /** The gateway the CLI sends to (`example`, `simulate`) and reads live figures from (`stats`). */
  gatewayUrl: variable('SETTLE_GATEWAY_URL', httpUrl.optional()),
  /** The Temporal CLI (`settle start`'s dev server); unset: PATH, then a project-local install. */
  temporalCli: variable('SETTLE_TEMPORAL_CLI', z.string().optional()),
  /** The Temporal time-skipping test server (tests); unset: PATH, then a project-local install. */
  temporalTestServer: variable('SETTLE_TEMPORAL_TEST_SERVER', z.string().optional()),
  /** `settle start`'s embedded PostgreSQL port. */
  devPostgresPort: variable('SETTLE_DEV_POSTGRES_PORT', port(1), { default: '5433' }),
  /** `settle start`'s Temporal dev server port. */
  devTemporalPort: variable('SETTLE_DEV_TEMPORAL_PORT', port(1), { default: '7233' }),
  /** `settle start`'s Temporal UI port. */
  devTemporalUiPort: variable('SETTLE_DEV_TEMPORAL_UI_PORT', port(1), { default: '8233' }),
  /** `settle start`'s stand-in carrier and ERP port. */
  devDownstreamPort: variable('SETTLE_DEV_DOWNSTREAM_PORT', port(1), { default: '8234' }),
  /** Directories searched for the Temporal binaries. */
  path: variable('PATH', z.string(), { default: '', system: true }),
  /** The operator named in `settle exceptions resolve`'s audit when the system has no user name. */
  user: variable('USER', z.string().optional(), { system: true }),
};

/**
 * What a role or a command needs to do its work. Workflow code never imports this module. A bad
 * value stops the process at start with a message naming the variable.
 */
export const configVariables = {
  /** PostgreSQL connection string. */
  databaseUrl: variable('DATABASE_URL', z.string()),
  /**
   * Temporal frontend, host:port: TEMPORAL_ADDRESS, or `address` of the TOML profile (see
   * TEMPORAL_VARIABLES for the rest of Temporal's own configuration).
   */
  temporalAddress: variable('TEMPORAL_ADDRESS', z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')),
  /** Temporal namespace the workflows run in (TEMPORAL_NAMESPACE or the profile's `namespace`). */
  temporalNamespace: variable('TEMPORAL_NAMESPACE', z.string(), { default: 'default' }),
  /** Task queue shared by the gateway (starts) and the workers (polls). */
  taskQueue: variable('SETTLE_TASK_QUEUE', z.string(), { default: 'settle' }),
  /** Interface the gateway and the worker's metrics endpoint listen on; the container image sets 0.0.0.0. */
  host: variable(
    'HOST',
    z
      .string()
      .regex(/^[A-Za-z0-9.:-]+$/, 'must be an IP address or a host name, such as 127.0.0.1 or 0.0.0.0'),
    { default: '127.0.0.1' },
  ),
  /** Gateway listen port. */
  port: variable('PORT', port(0), { default: '8080' }),
  /** Standard Webhooks secrets (whsec_<base64>), comma-separated; more than one while rotating. */
  webhookSecrets: variable(
    'SETTLE_WEBHOOK_SECRETS',
    secretList('each secret must look like whsec_<base64>', WHSEC),
  ),
  /** Stripe webhook endpoint signing secrets (whsec_…), comma-separated; more than one while rolling. */
  stripeWebhookSecrets: variable(
    'SETTLE_STRIPE_WEBHOOK_SECRETS',
    secretList('each secret must look like whsec_… (the endpoint secret from the Stripe dashboard)', WHSEC),
  ),
  /** Adyen HMAC keys (hex), comma-separated; more than one while rotating. */
  adyenHmacKeys: variable(
    'SETTLE_ADYEN_HMAC_KEYS',
    secretList(
      'each key must be the hexadecimal HMAC key from the Adyen Customer Area',
      /^(?:[0-9A-Fa-f]{2}){16,}$/,
    ),
  ),
  /** Basic auth Adyen must present on /webhooks/adyen, as user:password; unset: none asked. */
  adyenBasicAuth: variable(
    'SETTLE_ADYEN_BASIC_AUTH',
    z
      .string()
      .regex(/^[^:]+:.+$/, 'must be user:password')
      .optional(),
  ),
  /** Secret that signs outbound reminder deliveries (whsec_<base64>). */
  outboundSecret: variable(
    'SETTLE_OUTBOUND_SECRET',
    z.string().regex(WHSEC, 'must look like whsec_<base64>').optional(),
  ),
  /** Bearer token for /reminders and /events. */
  apiToken: variable('SETTLE_API_TOKEN', z.string().min(16, 'must be at least 16 characters').optional()),
  /** Carrier API that releases and re-holds shipments. */
  carrierUrl: variable('SETTLE_CARRIER_URL', httpUrl.optional()),
  /** ERP API that receives ledger entries. */
  erpUrl: variable('SETTLE_ERP_URL', httpUrl.optional()),
  /** How long a claim is kept (ms): far longer than any provider replay horizon. */
  claimRetentionMs: variable('SETTLE_CLAIM_RETENTION', duration, { default: '90d' }),
  /** A delivery still retrying this long (ms) after it was written is listed as `delivery_stuck`. */
  deliveryStuckAfterMs: variable('SETTLE_DELIVERY_STUCK_AFTER', duration, { default: '5m' }),
  /** Allow reminder targets on private and loopback addresses (development and tests only). */
  allowPrivateTargets: variable('SETTLE_ALLOW_PRIVATE_TARGETS', booleanFlag, { default: 'false' }),
  /** Port of `settle worker`'s own /metrics (and /healthz) endpoint; 0 picks a free one. */
  metricsPort: variable('SETTLE_METRICS_PORT', port(0), { default: '9464' }),
  /**
   * Port of the gateway's operator listener (`settle gateway`, `settle serve`): /metrics, /readyz with
   * its details and /healthz, no token asked. Unset: none; /metrics on PORT needs SETTLE_API_TOKEN.
   */
  gatewayMetricsPort: variable('SETTLE_GATEWAY_METRICS_PORT', port(0).optional()),
  /** Every listener: a request (headers and body) not in full this long after it began is a 408, closed. */
  requestTimeoutMs: variable('SETTLE_REQUEST_TIMEOUT', timeout, { default: '30s' }),
  /** Every listener: a request line and headers not in within this (at most the request timeout), 408. */
  headersTimeoutMs: variable('SETTLE_HEADERS_TIMEOUT', timeout, { default: '10s' }),
  /** Every listener: a kept-alive connection idle this long is closed; keep it above a load balancer's. */
  idleTimeoutMs: variable('SETTLE_IDLE_TIMEOUT', timeout, { default: '75s' }),
  /** Every listener: open connections at most; one more is closed as soon as it is accepted. */
  maxConnections: variable(
    'SETTLE_MAX_CONNECTIONS',
    z.coerce
      .number({ message: 'must be a whole number of at least 1' })
      .int('must be a whole number of at least 1')
      .min(1, 'must be a whole number of at least 1'),
    { default: '1000' },
  ),
  /**
   * How long a gateway request waits for a free PostgreSQL connection; past it, 503 with Retry-After
   * and nothing written, rather than a queue without bound.
   */
  admissionWaitMs: variable('SETTLE_ADMISSION_WAIT', timeout, { default: '2s' }),
  /**
   * Workflow runs a worker keeps in memory between tasks. The SDK sizes its default from the heap
   * limit (about 2,300 with a 4 GB heap), so that many reminders waiting for their due date would all
   * stay resident. Payment runs finish within seconds and leave the cache when they close; an evicted
   * reminder replays its short history on its next task.
   */
  maxCachedWorkflows: variable(
    'SETTLE_MAX_CACHED_WORKFLOWS',
    z.coerce
      .number({ message: 'must be a whole number of at least 2' })
      .int('must be a whole number of at least 2')
      .min(2, 'must be a whole number of at least 2'),
    { default: '250' },
  ),
  /**
   * Bulk runs (`settle import`) go to their own task queue, `<queue>-bulk`, which every worker also
   * polls with this many workflow-task slots (and twice as many for its steps): however long an
   * import, it never holds more than these slots of a worker, and live events never queue behind it.
   */
  bulkConcurrency: variable(
    'SETTLE_BULK_CONCURRENCY',
    z.coerce
      .number({ message: 'must be a whole number from 1 to 100' })
      .int('must be a whole number from 1 to 100')
      .min(1, 'must be a whole number from 1 to 100')
      .max(100, 'must be a whole number from 1 to 100'),
    { default: '2' },
  ),
  /**
   * Payload encryption keys (`<key id>:<base64 of 32 bytes>`, comma-separated): every payload settle
   * writes to Temporal is encrypted under the first, and read with whichever its key ID names (a key
   * rotates by going first, the old one kept after it). Unset: payloads are written in plain JSON.
   */
  payloadKeys: variable('SETTLE_PAYLOAD_KEYS', payloadKeys.optional()),
  /** A file holding the keys instead (one a line, or comma-separated), for a mounted secret. */
  payloadKeysFile: variable('SETTLE_PAYLOAD_KEYS_FILE', z.string().optional()),
  /** Bearer token `settle codec-server` requires on /encode and /decode. */
  codecToken: variable('SETTLE_CODEC_TOKEN', z.string().min(16, 'must be at least 16 characters').optional()),
  /** Port of `settle codec-server`. */
  codecPort: variable('SETTLE_CODEC_PORT', port(0), { default: '8235' }),
  /** The one browser origin (the Temporal UI's) `settle codec-server` answers cross-origin requests from. */
  codecCorsOrigin: variable(
    'SETTLE_CODEC_CORS_ORIGIN',
    httpUrl
      .refine((value) => new URL(value).origin === value, 'must be an origin: scheme, host and port, no path')
      .optional(),
  ),
};

/**
 * Temporal's own environment configuration, read through @temporalio/envconfig exactly as the
 * Temporal CLI reads it (see temporal-profile.ts); each overrides its key of the TOML profile.
 * TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE end up in the schema above.
 */
export const TEMPORAL_VARIABLES = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_GRPC_META_<NAME>',
  'TEMPORAL_CONFIG_FILE',
  'TEMPORAL_PROFILE',
] as const;

/** Read (from the system) to find Temporal's default config file, ~/.config/temporalio/temporal.toml. */
export const TEMPORAL_SYSTEM_VARIABLES = ['HOME', 'XDG_CONFIG_HOME'] as const;

type Variables = Record<string, Variable>;
type Shape<V extends Variables> = { [K in keyof V]: V[K]['schema'] };

export function objectSchema<V extends Variables>(variables: V): z.ZodObject<Shape<V>> {
  return z.object(
    Object.fromEntries(Object.entries(variables).map(([key, v]) => [key, v.schema])) as Shape<V>,
  );
}

export const settingsSchema = objectSchema(settingsVariables);
export const configSchema = objectSchema(configVariables);

/** The process settings: parsed from the environment wherever needed, before anything else. */
export type Settings = z.output<typeof settingsSchema>;

/** What Temporal's environment configuration adds beyond address and namespace. */
type TemporalOptions = {
  /** Sent as `Authorization: Bearer <key>` on every Temporal call (Temporal Cloud API keys). */
  temporalApiKey?: string;
  /** TLS towards the frontend: `true` with the system's roots, an object for mTLS or a private CA. */
  temporalTls?: TLSConfig | boolean;
  /** Extra gRPC headers (TEMPORAL_GRPC_META_* or the profile's `grpc_meta`). */
  temporalGrpcMeta?: Record<string, string>;
};

/** What a role or a command works with, parsed once at its start. */
export type Config = z.output<typeof configSchema> & TemporalOptions;
