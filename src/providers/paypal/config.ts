import { z } from 'zod';
import { accountList, duration, providerApiBase, varied, variable } from '../../domain/env-variables';
import type { ConfigIssue } from '../../domain/config-error';

/** PayPal's variables: its part of settle's configuration (src/config/schema.ts spreads it in). */
export const paypalVariables = {
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
};

/** PayPal's variables as the configuration parses them. */
export type PaypalConfig = {
  [K in keyof typeof paypalVariables]: z.output<(typeof paypalVariables)[K]['schema']>;
};

/** The webhook IDs whose PayPal deliveries are taken: SETTLE_PAYPAL_WEBHOOK_ID (one, or a list) and SETTLE_PAYPAL_WEBHOOK_IDS. */
export function paypalWebhookIds(
  config: Partial<Pick<PaypalConfig, 'paypalWebhookId' | 'paypalWebhookIds'>>,
): string[] {
  const single = (config.paypalWebhookId ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  return [...new Set([...single, ...(config.paypalWebhookIds ?? [])])];
}

/** The webhook ID PayPal's webhooks simulator signs its mock events for. */
export const PAYPAL_SIMULATOR_WEBHOOK_ID = 'WEBHOOK_ID';

/** PayPal's sandbox API is test mode, its live API live; another host (a proxy, a stand-in): unknown. */
function paypalApiMode(base: string): 'live' | 'test' | undefined {
  const host = new URL(base).hostname;
  if (/(^|\.)sandbox\.paypal\.com$/.test(host)) return 'test';
  if (/(^|\.)paypal\.com$/.test(host)) return 'live';
  return undefined;
}

/** PayPal's variables each valid alone that settle refuses together, each named with what to set. */
export function paypalCombinationIssues(
  config: Partial<PaypalConfig> & { providerMode?: 'live' | 'test' },
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const apiMode = config.paypalApiBase ? paypalApiMode(config.paypalApiBase) : undefined;
  if (config.paypalClientId && config.providerMode && apiMode && apiMode !== config.providerMode) {
    issues.push({
      variable: 'SETTLE_PAYPAL_API_BASE',
      message:
        `is PayPal's ${apiMode === 'test' ? 'sandbox' : 'live'} API, but SETTLE_PROVIDER_MODE is ` +
        `${config.providerMode}: set ${config.providerMode === 'live' ? 'https://api-m.paypal.com' : 'https://api-m.sandbox.paypal.com'} or change SETTLE_PROVIDER_MODE`,
    });
  }
  // Anyone can have PayPal's simulator sign a mock delivery for its webhook ID, and then send a body of
  // their own under it (the signature covers a CRC32 of the body): never in live mode.
  if (config.providerMode === 'live' && paypalWebhookIds(config).includes(PAYPAL_SIMULATOR_WEBHOOK_ID)) {
    issues.push({
      variable: config.paypalWebhookIds?.includes(PAYPAL_SIMULATOR_WEBHOOK_ID)
        ? 'SETTLE_PAYPAL_WEBHOOK_IDS'
        : 'SETTLE_PAYPAL_WEBHOOK_ID',
      message:
        `lists ${PAYPAL_SIMULATOR_WEBHOOK_ID}, PayPal's webhooks simulator's ID, which anyone can have ` +
        'PayPal sign a delivery for, but SETTLE_PROVIDER_MODE is live: remove it (docs/providers.md)',
    });
  }
  return issues;
}
