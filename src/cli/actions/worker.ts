import { createPool } from '../../db/pool';
import { logger } from '../../lib/logger';
import { startTracing, stopTracing } from '../../lib/tracing';
import { startMetricsServer } from '../../metrics/metrics-server';
import { missingDownstreamVariables } from '../../worker/run';
import { checkNamespace } from '../../temporal/connection';
import { CliError, roleConfig } from '../context';

/** `settle worker`: apart from the gateway's modules (fastify, the provider libraries), which it never loads. */
export async function worker(): Promise<void> {
  const config = roleConfig();
  const missing = missingDownstreamVariables(config);
  if (missing.length) {
    throw new CliError(
      `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set: a worker without its ` +
        'downstream targets cannot deliver payments. Set them (only `npm start` runs stand-ins).',
    );
  }
  await startTracing('worker');
  const pool = createPool(config.databaseUrl);
  const metrics = await startMetricsServer({ port: config.metricsPort, host: config.host });
  logger.info({ url: `${metrics.url}/metrics` }, 'worker metrics listening');
  try {
    // /healthz (the process is up) answers from here on: the Temporal client, the retention schedule
    // and the worker SDK load only now, while a worker's readiness is its polling Temporal.
    const [{ connectClient }, { prepareRetention }, { runWorker }] = await Promise.all([
      import('../../temporal/client.js'),
      import('../../app/purge-schedule.js'),
      import('../../worker/run.js'),
    ]);
    const client = await connectClient(config);
    // Fail fast: a worker that cannot register ends here with the cause, never idles unhealthy.
    const problem = await checkNamespace(
      client,
      undefined,
      config.temporalTls !== undefined && config.temporalTls !== false,
    );
    if (problem && problem.code !== 'unreachable') {
      await client.connection.close();
      throw new CliError(problem.message);
    }
    await prepareRetention(client, config, logger);
    await client.connection.close();
    await runWorker({ config, pool });
  } finally {
    await metrics.close();
    await pool.end();
    await stopTracing();
  }
}
