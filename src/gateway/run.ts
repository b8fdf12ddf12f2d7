import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { DEFAULT_HOST, type Config } from '../config';
import { logger } from '../lib/logger';
import { buildGateway } from './server';

/** Builds the gateway from the configuration and listens on HOST:PORT. */
export async function startGateway(deps: {
  config: Config;
  pool: pg.Pool;
  client: Client;
  host?: string;
}): Promise<{ app: FastifyInstance; url: string }> {
  const { config } = deps;
  const providerSecrets = (config.stripeWebhookSecrets?.length ?? 0) + (config.adyenHmacKeys?.length ?? 0);
  if (config.webhookSecrets.length === 0 && providerSecrets === 0) {
    throw new Error(
      'SETTLE_WEBHOOK_SECRETS is not set (nor SETTLE_STRIPE_WEBHOOK_SECRETS or SETTLE_ADYEN_HMAC_KEYS): ' +
        'the gateway cannot verify payment webhooks without it.',
    );
  }
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
    logger,
  });
  const host = deps.host ?? config.host ?? DEFAULT_HOST;
  await app.listen({ port: config.port, host });
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  return { app, url: `http://${shownHost}:${config.port}` };
}
