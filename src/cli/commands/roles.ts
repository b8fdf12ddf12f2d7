import type { Command } from 'commander';
import { connectClient } from '../../client';
import { createPool } from '../../db/pool';
import { startGateway } from '../../gateway/run';
import { logger } from '../../lib/logger';
import { startMetricsServer } from '../../metrics/metrics-server';
import { prepareRetention } from '../../retention';
import { runDevStack } from '../../stack/dev-stack';
import { missingDownstreamVariables, runWorker } from '../../worker';
import { CliError, commandConfig } from '../context';

/** `settle start`, `settle worker`, `settle gateway`: the long-running processes. */
export function registerRoles(program: Command) {
  program
    .command('start')
    .description(
      'Run the whole stack on one machine: embedded PostgreSQL and a Temporal dev server with its UI ' +
        '(persisted under .settle/), migrations, a worker and the gateway, and a stand-in carrier and ERP ' +
        'unless SETTLE_CARRIER_URL or SETTLE_ERP_URL is set. What `npm start` runs.',
    )
    .action(async () => {
      await runDevStack();
    });

  program
    .command('worker')
    .description(
      'Run one worker process (polls SETTLE_TASK_QUEUE); SIGTERM drains in-flight tasks, then exits. ' +
        'Serves /metrics on SETTLE_METRICS_PORT and ensures the daily claim purge Schedule. ' +
        'Runs the workflow bundle built once into .settle/cache; SETTLE_MAX_CACHED_WORKFLOWS bounds ' +
        'the runs it keeps in memory. Refuses to start without SETTLE_CARRIER_URL and SETTLE_ERP_URL.',
    )
    .action(async () => {
      const { config } = commandConfig();
      const missing = missingDownstreamVariables(config);
      if (missing.length) {
        throw new CliError(
          `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set: a worker without its ` +
            'downstream targets cannot deliver payments. Set them (only `npm start` runs stand-ins).',
        );
      }
      const pool = createPool(config.databaseUrl);
      const metrics = await startMetricsServer({ port: config.metricsPort ?? 0, db: pool });
      logger.info({ url: `${metrics.url}/metrics` }, 'worker metrics listening');
      try {
        const client = await connectClient(config);
        await prepareRetention(client, config, logger);
        await client.connection.close();
        await runWorker({ config, pool });
      } finally {
        await metrics.close();
        await pool.end();
      }
    });

  program
    .command('gateway')
    .description(
      'Run one gateway process (HTTP on PORT); SIGTERM stops accepting and finishes open requests.',
    )
    .action(async () => {
      const { config } = commandConfig();
      const pool = createPool(config.databaseUrl);
      const client = await connectClient(config);
      const { app, url } = await startGateway({ config, pool, client });
      logger.info({ url }, 'gateway listening');
      await new Promise<void>((resolve) => {
        const stop = () => void app.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await client.connection.close();
      await pool.end();
    });
}
