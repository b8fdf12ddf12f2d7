import type { Config } from './config';
import { createPool } from './db/pool';
import { logger } from './lib/logger';
import { startTracing, stopTracing } from './tracing/tracing';
import { startMetricsServer } from './metrics/metrics-server';
import type { WorkerOptions } from './worker-runtime/create-worker';
import { refuseWithoutTargets } from './roles/refusal';
import { listeningOn } from './config/port-in-use';
import { versionedWorkerFailure } from './temporal/worker-versioning';

export type WorkerRoleOptions = Pick<WorkerOptions, 'interceptors' | 'tuning' | 'sdkOptions'> & {
  /** /metrics on HOST:SETTLE_METRICS_PORT (default on); the proof worker process runs without. */
  metrics?: boolean;
  /** Ensures the daily claim purge Schedule before polling (default on); not the proof worker. */
  retention?: boolean;
  /** Tracing when the environment configures it (default on); not the proof worker. */
  tracing?: boolean;
  /**
   * Refuses to start without every delivery target's URL (default on). The proof worker starts
   * without them, as the tests that need no carrier or ERP (reminders) run it; an undeliverable row
   * is then parked not_configured.
   */
  requireTargets?: boolean;
  /** Called once the worker is built and about to poll (testkit/worker-process.ts prints `worker ready`). */
  onReady?: () => void;
};

/**
 * `settle worker` (and testkit/worker-process.ts): one worker process until SIGINT/SIGTERM
 * (lib/shutdown.ts), then drains in-flight tasks and closes. A worker that cannot register (missing
 * namespace, refused credentials or TLS) ends the start naming the cause; one that stops polling on
 * its own ends the process with it. Loads none of the gateway's modules.
 */
export async function runWorker(config: Config, options: WorkerRoleOptions = {}): Promise<void> {
  const { metrics: withMetrics = true, retention = true, tracing = true, requireTargets = true } = options;
  if (requireTargets) refuseWithoutTargets(config);
  if (!config.reminderSecret?.length) {
    // Not a refusal: payments need no reminder secret. Never signed with SETTLE_OUTBOUND_SECRET instead.
    logger.warn(
      { variable: 'SETTLE_REMINDER_SECRET' },
      'SETTLE_REMINDER_SECRET is not set: due reminders are held (not_configured, retried) until it is',
    );
  }
  if (tracing) await startTracing('worker');
  const pool = createPool(config.databaseUrl);
  const metrics = withMetrics
    ? await listeningOn(
        'SETTLE_METRICS_PORT',
        config.metricsPort,
        startMetricsServer({ port: config.metricsPort, host: config.host, limits: config }),
      )
    : undefined;
  if (metrics) logger.info({ url: `${metrics.url}/metrics` }, 'worker metrics listening');
  try {
    // /healthz (the process is up) answers from here on: the Temporal client, the retention schedule
    // and the worker SDK load only now, while a worker's readiness is its polling Temporal.
    const [{ clientOnWorkerConnection }, { prepareRetention }, { createWorker, runUntilStopped }] =
      await Promise.all([
        import('./client.js'),
        import('./temporal/purge-schedule.js'),
        import('./worker-runtime/create-worker.js'),
      ]);
    // createWorker checks the namespace first: a worker that cannot register ends here with the
    // cause, never idles unhealthy.
    const { interceptors, tuning, sdkOptions } = options;
    const { worker, connection } = await createWorker({ config, pool, interceptors, tuning, sdkOptions });
    try {
      if (retention) await prepareRetention(clientOnWorkerConnection(connection, config), config, logger);
      logger.info(
        {
          taskQueue: config.taskQueue,
          ...(config.buildId ? { deployment: config.deploymentName, buildId: config.buildId } : {}),
        },
        'worker running',
      );
      options.onReady?.();
      await runUntilStopped(worker, 'worker (draining in-flight tasks)').catch((error: unknown) => {
        throw versionedWorkerFailure(error, config);
      });
    } finally {
      await connection.close();
    }
  } finally {
    await metrics?.close();
    await pool.end();
    if (tracing) await stopTracing();
  }
}
