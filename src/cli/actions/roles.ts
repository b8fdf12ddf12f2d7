import type { FastifyInstance } from 'fastify';
import { clientOnWorkerConnection, connectClient } from '../../temporal/client';
import { createPool } from '../../db/pool';
import { missingWebhookSecrets, startGateway } from '../../gateway/run';
import { logger } from '../../lib/logger';
import { prepareRetention } from '../../app/purge-schedule';
import { createWorker, missingDownstreamVariables, runUntilStopped } from '../../worker/run';
import { onShutdown } from '../../lib/shutdown';
import { startTracing, stopTracing } from '../../lib/tracing';
import { checkNamespace, probeTls } from '../../temporal/connection';
import { CliError, roleConfig } from '../context';

/** How long a starting gateway waits for Temporal's answer about its namespace. */
const GATEWAY_START_CHECK_MS = 10_000;

/** How long a stopping gateway lets open connections finish before cutting them. */
const GATEWAY_CLOSE_GRACE_MS = 3_000;

/** `settle gateway` and `settle serve` (`settle worker` is worker.ts: it loads no gateway). */
export async function gateway(): Promise<void> {
  const config = roleConfig();
  const missingSecrets = missingWebhookSecrets(config);
  if (missingSecrets) throw new CliError(missingSecrets);
  await startTracing('gateway');
  const pool = createPool(config.databaseUrl);
  const refused = await probeTls(config);
  if (refused) {
    await pool.end();
    throw new CliError(refused);
  }
  const client = await connectClient(config);
  // A namespace that is missing, credentials or a TLS handshake refused: no request could ever be
  // admitted, so the gateway stops here naming the cause. A Temporal that is only down (or not up
  // yet) is no reason: the gateway starts, answers 503 with Retry-After, and /readyz says why.
  const problem = await checkNamespace(
    client,
    GATEWAY_START_CHECK_MS,
    config.temporalTls !== undefined && config.temporalTls !== false,
  );
  if (problem && problem.code !== 'unreachable') {
    await client.connection.close().catch(() => {});
    await pool.end();
    throw new CliError(problem.message);
  }
  if (problem) logger.warn({ temporal: problem.code }, problem.message);
  const { app, url } = await startGateway({ config, pool, client });
  logger.info({ url }, 'gateway listening');
  await new Promise<void>((resolve) => {
    onShutdown('gateway (finishing open requests)', () => closeGateway(app).then(resolve));
  });
  await client.connection.close();
  await pool.end();
  await stopTracing();
}

export async function serve(): Promise<void> {
  const config = roleConfig();
  const missingSecrets = missingWebhookSecrets(config);
  if (missingSecrets) throw new CliError(missingSecrets);
  const missing = missingDownstreamVariables(config);
  if (missing.length) throw new CliError(`${missing.join(' and ')} not set: see \`settle worker --help\`.`);
  await startTracing('serve');
  const pool = createPool(config.databaseUrl);
  try {
    const refused = await probeTls(config);
    if (refused) throw new CliError(refused);
    const { worker, connection } = await createWorker({ config, pool });
    const client = clientOnWorkerConnection(connection, config);
    try {
      const problem = await checkNamespace(
        client,
        GATEWAY_START_CHECK_MS,
        config.temporalTls !== undefined && config.temporalTls !== false,
      );
      if (problem) throw new CliError(problem.message);
      await prepareRetention(client, config, logger);
      const { app, url } = await startGateway({ config, pool, client });
      logger.info({ url, taskQueue: config.taskQueue }, 'gateway listening, worker running');
      try {
        await runUntilStopped(worker, 'gateway and worker (finishing requests, draining tasks)', () =>
          closeGateway(app),
        );
      } finally {
        await app.close().catch(() => {});
      }
    } finally {
      await connection.close();
    }
  } finally {
    await pool.end();
    await stopTracing();
  }
}

/** Stops accepting and finishes open requests; keep-alive connections are cut after a grace. */
async function closeGateway(app: FastifyInstance): Promise<void> {
  const closing = app.close();
  // A client sending back to back on a keep-alive connection would hold close() open: after the
  // grace its connections are cut (its requests were answered 503 since close began).
  const cut = setTimeout(() => app.server.closeAllConnections(), GATEWAY_CLOSE_GRACE_MS);
  await closing;
  clearTimeout(cut);
}
