import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import { createPool } from '../db/pool';
import { missingWebhookSecrets, startGateway, type OperatorListener } from '../gateway/run';
import { logger } from '../lib/logger';
import { onShutdown } from '../lib/shutdown';
import { startTracing, stopTracing } from '../tracing/tracing';
import { connectClient } from '../client';
import { probeTls, requireNamespace, usesTls } from '../temporal/connection';
import { RoleRefusal } from './refusal';
import { listeningOn } from '../config/port-in-use';

/** How long a starting gateway waits for Temporal's answer about its namespace. */
const GATEWAY_START_CHECK_MS = 10_000;

/** How long a stopping gateway lets open connections finish before cutting them. */
const GATEWAY_CLOSE_GRACE_MS = 3_000;

/**
 * Connections of the gateway's operator pool: /metrics and /readyz read PostgreSQL on these (one
 * statement at a time, cached), never on the connections webhooks are admitted on.
 */
export const OPERATOR_POOL_SIZE = 2;

/** Refuses a gateway that could verify no payment webhook (`settle gateway`, `settle serve`). */
export function refuseWithoutWebhookSecrets(config: Config): void {
  const missing = missingWebhookSecrets(config);
  if (missing) throw new RoleRefusal(missing);
}

/** Refuses a TLS handshake with Temporal that the frontend turns down (nothing of settle could run). */
export async function refuseTlsRefused(config: Config): Promise<void> {
  const refused = await probeTls(config);
  if (refused) throw new RoleRefusal(refused);
}

/**
 * `settle gateway`: HTTP on HOST:PORT until SIGINT/SIGTERM (lib/shutdown.ts), then stops accepting,
 * finishes open requests and closes. A namespace that is missing, credentials or a TLS handshake
 * refused end the start naming the cause; a Temporal that is only down (or not up yet) does not.
 */
export async function runGateway(config: Config): Promise<void> {
  refuseWithoutWebhookSecrets(config);
  await startTracing('gateway');
  const pool = createPool(config.databaseUrl);
  const operatorPool = createPool(config.databaseUrl, { max: OPERATOR_POOL_SIZE });
  let client: Client | undefined;
  try {
    await refuseTlsRefused(config);
    client = await connectClient(config);
    // A Temporal that is down is no reason to stay down: the gateway answers 503 with Retry-After
    // meanwhile, and /readyz says why.
    const problem = await requireNamespace(client, {
      timeoutMs: GATEWAY_START_CHECK_MS,
      tls: usesTls(config),
      unreachable: 'proceed',
    });
    if (problem) logger.warn({ temporal: problem.code }, problem.message);
    const { app, url, operatorListener } = await listeningOn(
      'PORT',
      config.port,
      startGateway({ config, pool, operatorPool, client }),
    );
    logger.info(
      { url, ...(operatorListener ? { operator: operatorListener.url } : {}) },
      'gateway listening',
    );
    await new Promise<void>((resolve) => {
      onShutdown('gateway (finishing open requests)', () =>
        closeGateway(app, operatorListener).then(resolve),
      );
    });
  } finally {
    await client?.connection.close().catch(() => {});
    await pool.end();
    await operatorPool.end();
    await stopTracing();
  }
}

/**
 * Stops accepting and finishes open requests; keep-alive connections are cut after a grace. The
 * operator listener, if any, closes with it.
 */
export async function closeGateway(app: FastifyInstance, operatorListener?: OperatorListener): Promise<void> {
  const closing = Promise.all([app.close(), operatorListener?.close()]);
  // A client sending back to back on a keep-alive connection would hold close() open: after the
  // grace its connections are cut (its requests were answered 503 since close began).
  const cut = setTimeout(() => app.server.closeAllConnections(), GATEWAY_CLOSE_GRACE_MS);
  await closing;
  clearTimeout(cut);
}
