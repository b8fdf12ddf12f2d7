import type { TLSConfig } from '@temporalio/client';
import { z } from 'zod';
import { parseDuration } from '../domain/duration';
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
import { varied } from './secret-strength';

// Every environment variable settle reads is declared here, once; the `Config` and `Settings` types
// are inferred from these declarations. A new variable is one entry below, plus its row in the
// README's configuration table and its line in .env.example (test/unit/config.test.ts checks both).
// A variable holding a secret says `secret: true`: it then also reads from <NAME>_FILE, refuses a value
// published as an example (example-secrets.ts), and its schema sets a minimum strength (below).

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
  /**
   * Holds a secret: <NAME>_FILE may name a file holding it instead (a mounted Secret; load.ts), a
   * value published as an example is refused (example-secrets.ts), and no message prints it.
   */
  secret?: boolean;
};

function variable<S extends z.ZodType>(
  name: string,
  schema: S,
  options: { default?: string; system?: boolean; secret?: boolean } = {},
): Variable<S> {
  return { name, schema, ...options };
}

// Minimum strengths (README, "Secrets"). Each message says what is expected, never what was given.

/** Standard Webhooks secrets: whsec_ and the base64 of at least this many random bytes (the spec's floor). */
export const STANDARD_WEBHOOKS_MIN_BYTES = 24;
/** Stripe endpoint secrets: whsec_ and at least this many letters and digits (Stripe issues longer ones). */
export const STRIPE_SECRET_MIN_CHARACTERS = 24;
/** Adyen HMAC keys: exactly this many hex digits (the 32-byte key the Customer Area generates). */
export const ADYEN_HMAC_KEY_HEX_DIGITS = 64;
/** Bearer tokens (SETTLE_API_TOKEN, SETTLE_CODEC_TOKEN): at least this long. */
export const TOKEN_MIN_CHARACTERS = 32;
export { SECRET_MIN_DISTINCT } from './secret-strength';
/** Adyen's basic-auth password: at least this long. */
export const BASIC_AUTH_PASSWORD_MIN_CHARACTERS = 16;

const GENERATE_WHSEC = `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`;

function isStandardWebhooksSecret(item: string): boolean {
  const match = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/.exec(item);
  return (
    !!match && Buffer.from(match[1]!, 'base64').length >= STANDARD_WEBHOOKS_MIN_BYTES && varied(match[1]!)
  );
}

const secretList = (message: string, valid: (item: string) => boolean) =>
  z
    .string()
    .optional()
    .transform((value) =>
      (value ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .refine((items) => items.every(valid), { message });

/** A comma-separated list that is not secret (account IDs): empty when unset. */
const accountList = secretList;

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

const booleanFlag = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL');

/** A loopback host: 127.0.0.0/8, ::1 or localhost (a local stand-in for a provider's API). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * A provider's API, scheme://host[:port] with no path. https only, but for a loopback address: the
 * API key travels in every request, and what the API lists is admitted without a signature.
 */
const providerApiBase = httpUrl
  .refine((value) => {
    const url = new URL(value);
    return url.pathname === '/' && !url.search && !url.hash && value.replace(/\/$/, '') === url.origin;
  }, 'must be scheme://host[:port], with no path')
  .refine((value) => {
    const url = new URL(value);
    return url.protocol === 'https:' || isLoopbackHost(url.hostname);
  }, 'must be https:// (http:// only for a loopback address such as 127.0.0.1)');

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
  /** Stripe webhook endpoint signing secrets (whsec_…), comma-separated; more than one while rolling. */
  stripeWebhookSecrets: variable(
    'SETTLE_STRIPE_WEBHOOK_SECRETS',
    secretList(
      `each secret must be whsec_ and at least ${STRIPE_SECRET_MIN_CHARACTERS} letters and digits (the endpoint secret from the Stripe dashboard)`,
      (item) =>
        new RegExp(`^whsec_[A-Za-z0-9]{${STRIPE_SECRET_MIN_CHARACTERS},}$`).test(item) &&
        varied(item.slice(6)),
    ),
    { secret: true },
  ),
  /**
   * Stripe API key the recovery sweep lists events with (a restricted key with read access to Events
   * is enough). Unset: no sweep, no recovery Schedule.
   */
  stripeApiKey: variable(
    'SETTLE_STRIPE_API_KEY',
    z
      .string()
      .refine(
        (value) => /^(sk|rk)_(live|test)_[A-Za-z0-9]{24,}$/.test(value) && varied(value.slice(8)),
        'must be a Stripe secret or restricted key (sk_live_…, rk_live_…, or their _test_ forms)',
      )
      .optional(),
    { secret: true },
  ),
  /**
   * Stripe's API, scheme://host[:port] (no path): a test server or an egress proxy in its place. https
   * only, but for a loopback address (a local stand-in): the key travels in every request.
   */
  stripeApiBase: variable('SETTLE_STRIPE_API_BASE', providerApiBase, { default: 'https://api.stripe.com' }),
  /** How often the recovery Schedule sweeps Stripe's events for what was never delivered (ms). */
  stripeSweepEveryMs: variable(
    'SETTLE_STRIPE_SWEEP_EVERY',
    duration.pipe(z.number().min(60_000, 'must be at least 1m')),
    { default: '15m' },
  ),
  /**
   * The ID PayPal gave the webhook (Developer Dashboard): part of the string every delivery's
   * signature covers, so a delivery signed for another webhook is refused. A comma-separated list is
   * taken too. Unset (and no SETTLE_PAYPAL_WEBHOOK_IDS): every PayPal request is refused (401).
   */
  paypalWebhookId: variable(
    'SETTLE_PAYPAL_WEBHOOK_ID',
    z
      .string()
      .regex(
        /^\s*[A-Za-z0-9_-]{1,64}\s*(?:,\s*[A-Za-z0-9_-]{1,64}\s*)*$/,
        "must be the webhook's ID as PayPal shows it (letters, digits, _ and -), or several comma-separated",
      )
      .optional(),
  ),
  /**
   * More PayPal webhook IDs whose deliveries are taken, comma-separated: the old and the new webhook
   * while rotating, or PayPal's simulator's `WEBHOOK_ID` (test only: refused with
   * SETTLE_PROVIDER_MODE=live).
   */
  paypalWebhookIds: variable(
    'SETTLE_PAYPAL_WEBHOOK_IDS',
    accountList("each ID must be a webhook's ID as PayPal shows it (letters, digits, _ and -)", (item) =>
      /^[A-Za-z0-9_-]{1,64}$/.test(item),
    ),
  ),
  /**
   * A PEM certificate to verify PayPal's signatures with instead of fetching PAYPAL-CERT-URL (offline
   * verification: tests, or a deployment without egress to PayPal). Not `_FILE`: it is a path, and
   * a certificate is no secret.
   */
  paypalCertPath: variable('SETTLE_PAYPAL_CERT_PATH', z.string().min(1).optional()),
  /** PayPal REST app's client ID, for the recovery sweep (OAuth2 client credentials). */
  paypalClientId: variable(
    'SETTLE_PAYPAL_CLIENT_ID',
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{16,128}$/, "must be the REST app's client ID from the PayPal dashboard")
      .optional(),
  ),
  /** PayPal REST app's secret, with SETTLE_PAYPAL_CLIENT_ID. Unset: no PayPal sweep. */
  paypalClientSecret: variable(
    'SETTLE_PAYPAL_CLIENT_SECRET',
    z
      .string()
      .refine(
        (value) => /^[A-Za-z0-9_-]{32,}$/.test(value) && varied(value),
        "must be the REST app's secret from the PayPal dashboard (at least 32 letters, digits, _ or -)",
      )
      .optional(),
    { secret: true },
  ),
  /** PayPal's REST API, scheme://host[:port]: https only but for a loopback address. */
  paypalApiBase: variable('SETTLE_PAYPAL_API_BASE', providerApiBase, { default: 'https://api-m.paypal.com' }),
  /** How often the recovery Schedule sweeps PayPal's webhook events (ms). */
  paypalSweepEveryMs: variable(
    'SETTLE_PAYPAL_SWEEP_EVERY',
    duration.pipe(z.number().min(60_000, 'must be at least 1m')),
    { default: '15m' },
  ),
  /** Adyen HMAC keys (hex), comma-separated; more than one while rotating. */
  adyenHmacKeys: variable(
    'SETTLE_ADYEN_HMAC_KEYS',
    secretList(
      `each key must be the ${ADYEN_HMAC_KEY_HEX_DIGITS} hex digits of an HMAC key from the Adyen Customer Area`,
      (item) =>
        new RegExp(`^[0-9A-Fa-f]{${ADYEN_HMAC_KEY_HEX_DIGITS}}$`).test(item) && varied(item.toUpperCase()),
    ),
    { secret: true },
  ),
  /**
   * Basic auth Adyen must present on /webhooks/adyen, as user:password. Required with
   * SETTLE_ADYEN_HMAC_KEYS (load.ts) unless SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH is true.
   */
  adyenBasicAuth: variable(
    'SETTLE_ADYEN_BASIC_AUTH',
    z
      .string()
      .refine(
        (value) =>
          new RegExp(`^[^:]+:.{${BASIC_AUTH_PASSWORD_MIN_CHARACTERS},}$`).test(value) &&
          varied(value.slice(value.indexOf(':') + 1)),
        `must be user:password, the password at least ${BASIC_AUTH_PASSWORD_MIN_CHARACTERS} random characters`,
      )
      .optional(),
    { secret: true },
  ),
  /**
   * Connected Stripe accounts (acct_…) whose payments settle applies, comma-separated. A Connect event
   * names its account in the signed `account` field; one without is the platform's own and always
   * taken. Unset: the platform account only; any other account's payment is `needs_review`.
   */
  stripeAccounts: variable(
    'SETTLE_STRIPE_ACCOUNTS',
    accountList('each account must be a Stripe account ID, acct_ and letters and digits', (item) =>
      /^acct_[A-Za-z0-9]{1,64}$/.test(item),
    ),
  ),
  /**
   * Adyen merchant accounts whose payments settle applies, comma-separated (each item's
   * merchantAccountCode, which its HMAC signs). Unset: any merchant account the HMAC keys sign for.
   */
  adyenMerchantAccounts: variable(
    'SETTLE_ADYEN_MERCHANT_ACCOUNTS',
    accountList('each account must be an Adyen merchant account code, letters, digits, _ . and -', (item) =>
      /^[A-Za-z0-9_.-]{1,80}$/.test(item),
    ),
  ),
  /**
   * PayPal merchant IDs whose payments settle applies, comma-separated (a capture's
   * `payee.merchant_id`, a refund's `payer.merchant_id`, a dispute's seller): for a platform that
   * receives its sellers' events. Unset: any merchant the webhook receives events for.
   */
  paypalMerchantIds: variable(
    'SETTLE_PAYPAL_MERCHANT_IDS',
    accountList('each ID must be a PayPal merchant ID (13 letters and digits as PayPal shows it)', (item) =>
      /^[A-Za-z0-9]{1,64}$/.test(item),
    ),
  ),
  /** true: take Adyen notifications on their HMAC alone, with no basic auth (an operator's choice). */
  adyenAllowNoBasicAuth: variable('SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH', booleanFlag, { default: 'false' }),
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
