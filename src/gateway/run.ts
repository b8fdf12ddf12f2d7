import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { combinationIssues, ConfigError, withProviderDefaults, type Config } from '../config';
import { listeningOn } from '../config/port-in-use';
import { logger } from '../lib/logger';
import { providerRouteOptions, type ProviderConfig } from './providers';
import { PROVIDER_MODULES } from '../providers/registry';
import { startMetricsServer } from '../metrics/metrics-server';
import { operatorViews } from './operations';
import { buildGateway } from './server';

/**
 * Why a gateway with this configuration could verify no payment webhook, or undefined: it needs
 * SETTLE_WEBHOOK_SECRETS or any one provider's webhook credentials (src/providers/registry.ts).
 */
export function missingWebhookSecrets(
  config: Pick<Config, 'webhookSecrets'> & ProviderConfig,
): string | undefined {
  if (config.webhookSecrets.length > 0) return undefined;
  const modules = PROVIDER_MODULES;
  const full = withProviderDefaults(config);
  if (modules.some((module) => module.takesWebhooks(full))) return undefined;
  return (
    `SETTLE_WEBHOOK_SECRETS is not set (nor any provider's: ${modules.map((m) => m.webhookVariables).join(', ')}): ` +
    'the gateway cannot verify payment webhooks without it.'
  );
}

/** The gateway's operator listener, when SETTLE_GATEWAY_METRICS_PORT is set. */
export type OperatorListener = { url: string; close(): Promise<void> };

/**
 * Builds the gateway from the configuration (the roles have refused one without webhook secrets:
 * missingWebhookSecrets) and listens on HOST:PORT, and with
 * SETTLE_GATEWAY_METRICS_PORT set, its operator listener on HOST:SETTLE_GATEWAY_METRICS_PORT (/metrics,
 * /readyz in full, /healthz; no token). `operatorPool` is what both read PostgreSQL on (default `pool`).
 */
export async function startGateway(deps: {
  config: Config;
  pool: pg.Pool;
  operatorPool?: pg.Pool;
  client: Client;
  host?: string;
}): Promise<{ app: FastifyInstance; url: string; operatorListener: OperatorListener | undefined }> {
  const { config } = deps;
  const combination = combinationIssues(config);
  if (combination.length > 0) throw new ConfigError(combination);
  const operatorPool = deps.operatorPool ?? deps.pool;
  const operator = operatorViews({
    pool: operatorPool,
    client: deps.client,
    deliveryStuckAfterMs: config.deliveryStuckAfterMs,
  });
  const app = buildGateway({
    pool: deps.pool,
    client: deps.client,
    taskQueue: config.taskQueue,
    webhookSecrets: config.webhookSecrets,
    ...providerRouteOptions(config),
    apiToken: config.apiToken,
    allowPrivateTargets: config.allowPrivateTargets,
    deliveryStuckAfterMs: config.deliveryStuckAfterMs,
    listenerLimits: config,
    admissionWaitMs: config.admissionWaitMs,
    operator,
    operatorPool,
    logger,
  });
  const host = deps.host ?? config.host;
  await app.listen({ port: config.port, host });
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  let operatorListener: OperatorListener | undefined;
  if (config.gatewayMetricsPort !== undefined) {
    try {
      operatorListener = await listeningOn(
        'SETTLE_GATEWAY_METRICS_PORT',
        config.gatewayMetricsPort,
        startMetricsServer({
          port: config.gatewayMetricsPort,
          host,
          limits: config,
          render: operator.metrics,
          readiness: operator.readiness,
        }),
      );
    } catch (error) {
      await app.close();
      throw error;
    }
  }
  return { app, url: `http://${shownHost}:${config.port}`, operatorListener };
}
