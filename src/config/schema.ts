import type { TLSConfig } from '@temporalio/client';
import { z } from 'zod';
import {
  booleanFlag,
  duration,
  httpUrl,
  secretList,
  varied,
  variable,
  type Variable,
} from '../domain/env-variables';
import {
  DELIVERY_TARGETS,
  OUTBOX_TARGETS,
  targetSecretKey,
  targetSecretVariable,
  type OutboxTarget,
  type TargetConfigKey,
  type TargetSecretKey,
} from '../domain/outbox';
import {
  TARGET_LIMITS,
  targetLimitKey,
  targetLimitVariable,
  type TargetLimit,
} from '../domain/target-limits';
import { parsePayloadKeys } from './payload-keys';
import { PROVIDER_VARIABLES } from '../providers/registry-configuration';

// Every environment variable settle reads is declared here, once; the `Config` and `Settings` types
// are inferred from these declarations. A new variable is one entry below, plus its row in the
// README's configuration table and its line in .env.example (test/unit/config.test.ts checks both).
// A variable holding a secret says `secret: true`: it then also reads from <NAME>_FILE, refuses a value
// published as an example (example-secrets.ts), and its schema sets a minimum strength (below).

// Minimum strengths (README, "Secrets"). Each message says what is expected, never what was given.

/** Standard Webhooks secrets: whsec_ and the base64 of at least this many random bytes (the spec's floor). */
export const STANDARD_WEBHOOKS_MIN_BYTES = 24;
/** Bearer tokens (SETTLE_API_TOKEN, SETTLE_CODEC_TOKEN): at least this long. */
export const TOKEN_MIN_CHARACTERS = 32;
export { SECRET_MIN_DISTINCT } from '../domain/env-variables';
export { isLoopbackHost, type Variable } from '../domain/env-variables';

const GENERATE_WHSEC = `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`;

function isStandardWebhooksSecret(item: string): boolean {
  const match = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/.exec(item);
  return (
    !!match && Buffer.from(match[1]!, 'base64').length >= STANDARD_WEBHOOKS_MIN_BYTES && varied(match[1]!)
  );
}

/** Standard Webhooks secrets, comma-separated (the first signs where settle signs). */
const standardWebhooksSecrets = secretList(
  `each secret must be whsec_ and the base64 of at least ${STANDARD_WEBHOOKS_MIN_BYTES} random bytes (${GENERATE_WHSEC})`,
  isStandardWebhooksSecret,
);

const token = z
  .string()
  .refine(
    (value) => value.length >= TOKEN_MIN_CHARACTERS && !/\s/.test(value) && varied(value),
    `must be at least ${TOKEN_MIN_CHARACTERS} random characters, no spaces (openssl rand -hex 24)`,
  );

const port = (min: number) =>
  z.coerce
    .number({ message: 'must be a port number' })
    .int('must be a port number')
    .min(min, 'must be a port number')
    .max(65535, 'must be a port number');

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

/** Each delivery target's URL variable (the carrier's releases and re-holds, the ERP's ledger entries). */
function targetUrlVariables() {
  return Object.fromEntries(
    OUTBOX_TARGETS.map((target) => [
      DELIVERY_TARGETS[target].configKey,
      variable(DELIVERY_TARGETS[target].variable, httpUrl.optional()),
    ]),
  ) as Record<TargetConfigKey, Variable<ReturnType<typeof httpUrl.optional>>>;
}

/** SETTLE_<TARGET>_SECRET for each delivery target of src/domain/outbox.ts, as `<target>Secret`. */
function targetSecretVariables() {
  return Object.fromEntries(
    OUTBOX_TARGETS.map((target) => [
      targetSecretKey(target),
      variable(targetSecretVariable(target), standardWebhooksSecrets, { secret: true }),
    ]),
  ) as Record<TargetSecretKey, Variable<typeof standardWebhooksSecrets>>;
}

/** What each target limit of src/domain/target-limits.ts parses, and its default. */
const TARGET_LIMIT_SCHEMAS = {
  RateLimit: {
    schema: z.coerce
      .number({ message: 'must be a number of calls a second above 0' })
      .positive('must be a number of calls a second above 0')
      .optional(),
  },
  MaxInFlight: {
    schema: z.coerce
      .number({ message: 'must be a whole number of at least 1' })
      .int('must be a whole number of at least 1')
      .min(1, 'must be a whole number of at least 1')
      .optional(),
  },
  OpenAfterMs: { schema: timeout, default: '1m' },
} as const;

/**
 * SETTLE_<TARGET>_RATE_LIMIT, SETTLE_<TARGET>_MAX_IN_FLIGHT and SETTLE_<TARGET>_OPEN_AFTER for each
 * delivery target, as `<target>RateLimit`, `<target>MaxInFlight`, `<target>OpenAfterMs`.
 */
function targetLimitVariables() {
  return Object.fromEntries(
    OUTBOX_TARGETS.flatMap((target) =>
      (Object.keys(TARGET_LIMITS) as TargetLimit[]).map((limit) => {
        const { schema, ...options } = TARGET_LIMIT_SCHEMAS[limit];
        return [targetLimitKey(target, limit), variable(targetLimitVariable(target, limit), schema, options)];
      }),
    ),
  ) as unknown as {
    [L in TargetLimit as `${OutboxTarget}${L}`]: Variable<(typeof TARGET_LIMIT_SCHEMAS)[L]['schema']>;
  };
}

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
  /** PostgreSQL connection string (a secret: it holds the password). */
  databaseUrl: variable('DATABASE_URL', z.string(), { secret: true }),
  /**
   * Temporal frontend, host:port: TEMPORAL_ADDRESS, or `address` of the TOML profile (see
   * TEMPORAL_VARIABLES for the rest of Temporal's own configuration).
   */
  temporalAddress: variable('TEMPORAL_ADDRESS', z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')),
  /** Temporal namespace the workflows run in (TEMPORAL_NAMESPACE or the profile's `namespace`). */
  temporalNamespace: variable('TEMPORAL_NAMESPACE', z.string(), { default: 'default' }),
  /** Task queue shared by the gateway (starts) and the workers (polls). */
  taskQueue: variable('SETTLE_TASK_QUEUE', z.string(), { default: 'settle' }),
  /**
   * This worker's build in the Temporal Worker Deployment (docs/deployment.md, "Upgrades"); the image
   * sets it from its version or commit. Unset: an unversioned worker, as before Worker Deployments.
   */
  buildId: variable(
    'SETTLE_BUILD_ID',
    z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/,
        'must be letters, digits, `.`, `_` or `-`, such as 1.4.0 or 3f8ced5',
      )
      .optional(),
  ),
  /** The Worker Deployment a worker with SETTLE_BUILD_ID joins. */
  deploymentName: variable(
    'SETTLE_DEPLOYMENT_NAME',
    z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/, 'must be letters, digits, `.`, `_` or `-`'),
    { default: 'settle' },
  ),
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
  webhookSecrets: variable('SETTLE_WEBHOOK_SECRETS', standardWebhooksSecrets, { secret: true }),
  // Each provider's variables, declared in its module (src/providers/<name>/config.ts).
  ...PROVIDER_VARIABLES,
  /**
   * `live` or `test`: provider events of the other mode (Stripe `livemode`, Adyen `live`) are
   * acknowledged as ignored and change nothing. Unset: both are taken.
   */
  providerMode: variable(
    'SETTLE_PROVIDER_MODE',
    z.enum(['live', 'test'], { message: 'must be live or test' }).optional(),
  ),
  /**
   * Standard Webhooks secrets that sign the calls to settle's own targets (carrier, ERP), comma-separated:
   * the first signs, the others are listed for the receiver, which verifies with each while rotating.
   */
  outboundSecret: variable('SETTLE_OUTBOUND_SECRET', standardWebhooksSecrets, { secret: true }),
  /**
   * Standard Webhooks secrets that sign the renewal reminders, and only them (the first signs): every
   * customer verifying a reminder holds it, so it must never verify a carrier or ERP call (load.ts
   * refuses one shared with SETTLE_OUTBOUND_SECRET or a target's). Unset: reminders are held, not sent.
   */
  reminderSecret: variable('SETTLE_REMINDER_SECRET', standardWebhooksSecrets, { secret: true }),
  /** Each delivery target's own signing secrets, SETTLE_<TARGET>_SECRET: in place of SETTLE_OUTBOUND_SECRET. */
  ...targetSecretVariables(),
  /** Bearer token for /reminders and /events. */
  apiToken: variable('SETTLE_API_TOKEN', token.optional(), { secret: true }),
  /** Each delivery target's URL (DELIVERY_TARGETS' `variable`: SETTLE_CARRIER_URL, SETTLE_ERP_URL). */
  ...targetUrlVariables(),
  /** Each delivery target's limits across every worker (docs/delivery.md, "Downstream pressure"). */
  ...targetLimitVariables(),
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
  payloadKeys: variable('SETTLE_PAYLOAD_KEYS', payloadKeys.optional(), { secret: true }),
  /**
   * SETTLE_PAYLOAD_KEYS' file form (one key a line, or comma-separated), read as every secret's
   * <NAME>_FILE is (load.ts); also a key of its own, named in the codec server's settings.
   */
  payloadKeysFile: variable('SETTLE_PAYLOAD_KEYS_FILE', z.string().optional()),
  /** Bearer token `settle codec-server` requires on /encode and /decode. */
  codecToken: variable('SETTLE_CODEC_TOKEN', token.optional(), { secret: true }),
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
  // settle's own addition: TEMPORAL_API_KEY read from a file (temporal-profile.ts).
  'TEMPORAL_API_KEY_FILE',
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
