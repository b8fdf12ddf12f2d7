import { defineProvider } from '../module';
import { createStripeAdapter } from './adapter';
import { stripeCombinationIssues, stripeVariables } from './config';
import { stripeOpenApi } from './openapi';
import { createStripeRecoverySource } from './recovery-source';
import { stripeRequestFor } from './simulator';

/** Stripe: `Stripe-Signature` verified with Stripe's library; its Events API for the recovery sweep. */
export const stripe = defineProvider({
  name: 'stripe',
  label: 'Stripe',
  variables: stripeVariables,
  combinationIssues: stripeCombinationIssues,
  takesWebhooks: (config) => config.stripeWebhookSecrets.length > 0,
  webhookVariables: 'SETTLE_STRIPE_WEBHOOK_SECRETS',
  route: { kind: 'event' },
  webhookAdapter: (config) => createStripeAdapter({ secrets: config.stripeWebhookSecrets }),
  exportAdapter: () => createStripeAdapter({ secrets: [] }),
  openapi: stripeOpenApi,
  recovery: {
    credentials: 'SETTLE_STRIPE_API_KEY (or _FILE; read access to Events is enough)',
    everyVariable: 'SETTLE_STRIPE_SWEEP_EVERY',
    on: (config) => !!config.stripeApiKey,
    everyMs: (config) => config.stripeSweepEveryMs,
    source: (config) =>
      createStripeRecoverySource({ apiKey: config.stripeApiKey!, apiBase: config.stripeApiBase }),
  },
  simulator: {
    signer(config) {
      const secret = config.stripeWebhookSecrets[0];
      if (!secret) return { ok: false, message: '--provider stripe needs SETTLE_STRIPE_WEBHOOK_SECRETS.' };
      return { ok: true, sign: (event) => stripeRequestFor(secret, event) };
    },
  },
  accountRule: (config) => ({
    kind: 'platform',
    accounts: config.stripeAccounts,
    noun: 'Stripe account',
    variable: 'SETTLE_STRIPE_ACCOUNTS',
  }),
  deploy: {
    variables: [
      { name: 'SETTLE_STRIPE_WEBHOOK_SECRETS', secret: true, required: true },
      { name: 'SETTLE_STRIPE_API_KEY', secret: true, roles: ['worker'] },
      { name: 'SETTLE_STRIPE_API_BASE', secret: false },
      { name: 'SETTLE_STRIPE_SWEEP_EVERY', secret: false },
      { name: 'SETTLE_STRIPE_ACCOUNTS', secret: false },
    ],
    files: [],
    egress: [
      { host: 'api.stripe.com', port: 443, when: 'SETTLE_STRIPE_API_KEY is set (the recovery sweep)' },
    ],
  },
});
