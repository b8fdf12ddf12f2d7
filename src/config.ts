import { z } from 'zod';
import { parseDuration } from './domain/duration';

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

/**
 * Everything settle reads from the environment, parsed once. A bad value stops the process at start
 * with a message naming the variable. Workflow code never imports this module.
 */
const configSchema = z.object({
  /** PostgreSQL connection string. */
  DATABASE_URL: z.string().min(1),
  /** Temporal frontend, host:port. */
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port'),
  /** Temporal namespace the workflows run in. */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Task queue shared by the gateway (starts) and the workers (polls). */
  SETTLE_TASK_QUEUE: z.string().min(1).default('settle'),
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
  SETTLE_CLAIM_RETENTION: z
    .string()
    .default('90d')
    .transform((value, ctx) => {
      const ms = parseDuration(value);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be a duration such as 90d, 36h or 30m' });
        return z.NEVER;
      }
      return ms;
    }),
  /** Allow reminder targets on private and loopback addresses (development and tests only). */
  SETTLE_ALLOW_PRIVATE_TARGETS: booleanFlag,
  /** Port of `settle worker`'s own /metrics (and /healthz) endpoint; 0 picks a free one. */
  SETTLE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /** Workflow runs a worker keeps in memory between tasks; unset: settle's default (see worker.ts). */
  SETTLE_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(2).optional(),
});

export type Config = {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
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

/** Parses the environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw = Object.fromEntries(
    Object.keys(configSchema.shape).map((key) => [key, env[key] === '' ? undefined : env[key]]),
  );
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? 'environment'),
        message: issue.message,
      })),
    );
  }
  const c = parsed.data;
  return {
    databaseUrl: c.DATABASE_URL,
    temporalAddress: c.TEMPORAL_ADDRESS,
    temporalNamespace: c.TEMPORAL_NAMESPACE,
    taskQueue: c.SETTLE_TASK_QUEUE,
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
    allowPrivateTargets: c.SETTLE_ALLOW_PRIVATE_TARGETS,
    metricsPort: c.SETTLE_METRICS_PORT,
    maxCachedWorkflows: c.SETTLE_MAX_CACHED_WORKFLOWS,
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
