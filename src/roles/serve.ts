import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { prepareRetention } from '../temporal/purge-schedule';
import type { Config } from '../config';
import { createPool } from '../db/pool';
import { startGateway } from '../gateway/run';
import { logger } from '../lib/logger';
import { onShutdown } from '../lib/shutdown';
import { startTracing, stopTracing } from '../tracing/tracing';
import { clientOnWorkerConnection } from '../client';
import { createWorker } from '../worker-runtime/create-worker';
import { closeGateway, OPERATOR_POOL_SIZE, refuseTlsRefused, refuseWithoutWebhookSecrets } from './gateway';
import { refuseWithoutTargets } from './refusal';
import { listeningOn } from '../config/port-in-use';

/** A gateway and a worker running in this process on one Temporal connection (startServe). */
export type RunningServe = {
  url: string;
  client: Client;
  /** Settles when the worker has stopped: after `stop`, or on its own (rejected with the cause). */
  running: Promise<void>;
  /** Stops accepting and finishes open requests, drains the worker, closes the connection. */
  stop(): Promise<void>;
};

/**
 * Starts a gateway and a worker on `pool` and one Temporal connection: the gateway's starts go out on
 * the worker's connection, so Temporal hands each new run's first task straight back to this worker
 * (eager start). `settle serve` and `npm start` (stack/dev-stack.ts) run it; the caller owns the pool.
 */
export async function startServe({ config, pool }: { config: Config; pool: pg.Pool }): Promise<RunningServe> {
  await refuseTlsRefused(config);
  // The gateway's /metrics and /readyz read on a pool of their own (roles/gateway.ts).
  const operatorPool = createPool(config.databaseUrl, { max: OPERATOR_POOL_SIZE });
  const { worker, connection } = await createWorker({ config, pool }).catch(async (error: unknown) => {
    await operatorPool.end();
    throw error;
  });
  try {
    // createWorker has checked the namespace (worker-runtime/create-worker.ts, connectWorker).
    const client = clientOnWorkerConnection(connection, config);
    await prepareRetention(client, config, logger);
    const { app, url, operatorListener } = await listeningOn(
      'PORT',
      config.port,
      startGateway({ config, pool, operatorPool, client }),
    );
    if (operatorListener) logger.info({ url: operatorListener.url }, 'gateway operator listener');
    const running = worker.run();
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        try {
          await closeGateway(app, operatorListener);
          worker.shutdown();
          await running.catch(() => {});
        } finally {
          await app.close().catch(() => {});
          await connection.close();
          await operatorPool.end();
        }
      })());
    return { url, client, running, stop };
  } catch (error) {
    await connection.close().catch(() => {});
    await operatorPool.end();
    throw error;
  }
}

/**
 * `settle serve`: startServe until SIGINT/SIGTERM (lib/shutdown.ts), then stops it. A worker that
 * stops polling on its own ends the process with it.
 */
export async function runServe(config: Config): Promise<void> {
  refuseWithoutWebhookSecrets(config);
  refuseWithoutTargets(config);
  await startTracing('serve');
  const pool = createPool(config.databaseUrl);
  try {
    const serve = await startServe({ config, pool });
    logger.info({ url: serve.url, taskQueue: config.taskQueue }, 'gateway listening, worker running');
    const off = onShutdown('gateway and worker (finishing requests, draining tasks)', () => serve.stop());
    try {
      await serve.running;
    } finally {
      off();
      await serve.stop();
    }
  } finally {
    await pool.end();
    await stopTracing();
  }
}
