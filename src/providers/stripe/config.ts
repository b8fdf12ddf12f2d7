import { z } from 'zod';
import {
  duration,
  accountList,
  providerApiBase,
  secretList,
  varied,
  variable,
} from '../../domain/env-variables';
import type { ConfigIssue } from '../../domain/config-error';

/** Stripe endpoint secrets: whsec_ and at least this many letters and digits (Stripe issues longer ones). */
export const STRIPE_SECRET_MIN_CHARACTERS = 24;

/** Stripe's variables: its part of settle's configuration (src/config/schema.ts spreads it in). */
export const stripeVariables = {
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
};

/** Stripe's variables as the configuration parses them. */
export type StripeConfig = {
  [K in keyof typeof stripeVariables]: z.output<(typeof stripeVariables)[K]['schema']>;
};

/**
 * A key of the other mode lists only events SETTLE_PROVIDER_MODE ignores: every sweep would admit
 * nothing, silently. Refused at start, naming both variables.
 */
export function stripeCombinationIssues(
  config: Partial<StripeConfig> & { providerMode?: 'live' | 'test' },
): ConfigIssue[] {
  const keyMode = /^(?:sk|rk)_(live|test)_/.exec(config.stripeApiKey ?? '')?.[1];
  if (!config.providerMode || !keyMode || keyMode === config.providerMode) return [];
  return [
    {
      variable: 'SETTLE_STRIPE_API_KEY',
      message:
        `is a ${keyMode}-mode key, but SETTLE_PROVIDER_MODE is ${config.providerMode}: set a ` +
        `${config.providerMode}-mode key (…_${config.providerMode}_…) or change SETTLE_PROVIDER_MODE`,
    },
  ];
}
