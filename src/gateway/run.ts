import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Config } from '../config';
import { logger } from '../lib/logger';
import { buildGateway } from './server';

/** Why a gateway with this configuration could verify no payment webhook, or undefined. */
export function missingWebhookSecrets(
  config: Pick<Config, 'webhookSecrets' | 'stripeWebhookSecrets' | 'adyenHmacKeys'>,
): string | undefined {
  const providerSecrets = config.stripeWebhookSecrets.length + config.adyenHmacKeys.length;
  if (config.webhookSecrets.length > 0 || providerSecrets > 0) return undefined;
  return (
    'SETTLE_WEBHOOK_SECRETS is not set (nor SETTLE_STRIPE_WEBHOOK_SECRETS or SETTLE_ADYEN_HMAC_KEYS): ' +
    'the gateway cannot verify payment webhooks without it.'
  );
}

/** Builds the gateway from the configuration and listens on HOST:PORT. */
export async function startGateway(deps: {
  config: Config;
  pool: pg.Pool;
  client: Client;
  host?: string;
}): Promise<{ app: FastifyInstance; url: string }> {
  const { config } = deps;
  const missing = missingWebhookSecrets(config);
  if (missing) throw new Error(missing);
  const app = buildGateway({
    pool: deps.pool,
    client: deps.client,
    taskQueue: config.taskQueue,
    webhookSecrets: config.webhookSecrets,
    stripeWebhookSecrets: config.stripeWebhookSecrets,
    adyenHmacKeys: config.adyenHmacKeys,
    adyenBasicAuth: config.adyenBasicAuth,
    apiToken: config.apiToken,
    allowPrivateTargets: config.allowPrivateTargets,
    deliveryStuckAfterMs: config.deliveryStuckAfterMs,
    listenerLimits: config,
    admissionWaitMs: config.admissionWaitMs,
    logger,
  });
  const host = deps.host ?? config.host;
  await app.listen({ port: config.port, host });
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  return { app, url: `http://${shownHost}:${config.port}` };
}
