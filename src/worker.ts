import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities, type ActivityDependencies } from './activities';
import { activityOutcomeInterceptor } from './activities/outcome-interceptor';
import { createRetentionActivities } from './activities/retention';
import type { Config } from './config';
import { logger, redactIds, redactMeta } from './lib/logger';
import { startDrainingTemporalMetrics, temporalMetricsBuffer } from './metrics/temporal-metrics';
import { temporalConnectionOptions, type TemporalConnectionConfig } from './temporal-connection';
import { workflowBundlePath } from './workflow-bundle';

/**
 * Runs kept in memory between tasks. The SDK sizes its default from the heap limit (about 2,300 with
 * a 4 GB heap), so that many reminders waiting for their due date would all stay resident. Payment
 * runs finish within seconds and leave the cache when they close; an evicted reminder replays its
 * short history on its next task.
 */
const MAX_CACHED_WORKFLOWS = 250;

let runtimeInstalled = false;

/**
 * Core's "workflow task duration exceeded 5 seconds". A payment's steps run as local activities inside
 * its workflow task, so under load (a 10,000-line import) the task is long by design, and core keeps
 * it alive past its timeout. Kept out of the warnings: step durations are in /metrics.
 */
const LONG_WORKFLOW_TASK = '[TMPRL1104]';

/**
 * Routes the SDK's own logs (which name workflow IDs, and so event IDs) through settle's JSON logger
 * with the IDs hashed. Once per process, before the first connection; later calls do nothing.
 */
export function installTemporalRuntime(options: { handleSignals?: boolean } = {}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.SETTLE_TEMPORAL_LOG_LEVEL ?? 'WARN') as 'WARN';
  Runtime.install({
    // `settle start` stops its parts in order itself; `settle worker` lets the SDK drain on a signal.
    shutdownSignals: options.handleSignals === false ? [] : ['SIGINT', 'SIGTERM', 'SIGQUIT', 'SIGUSR2'],
    // Core (Rust) logs are forwarded to the same logger, so they are JSON and redacted too.
    telemetryOptions: {
      logging: { filter: { core: level, other: level }, forward: {} },
      // The SDK's metrics are served from settle's own /metrics (see metrics/temporal-metrics.ts).
      metrics: { buffer: temporalMetricsBuffer },
    },
    logger: new DefaultLogger(level, (entry) => {
      const method =
        entry.level === 'TRACE' || entry.message.startsWith(LONG_WORKFLOW_TASK)
          ? ('trace' as const)
          : (entry.level.toLowerCase() as 'info');
      logger[method]({ component: 'temporal', ...redactMeta(entry.meta) }, redactIds(entry.message));
    }),
  });
  startDrainingTemporalMetrics();
}

export type WorkerOptions = {
  /** Without claimRetentionMs the worker runs no purge activity (tools replaying histories). */
  config: TemporalConnectionConfig &
    Pick<Config, 'temporalNamespace' | 'taskQueue'> & {
      claimRetentionMs?: number;
    } & Partial<
      Pick<Config, 'carrierUrl' | 'erpUrl' | 'outboundSecret' | 'allowPrivateTargets' | 'maxCachedWorkflows'>
    >;
  pool: pg.Pool;
  hooks?: ActivityDependencies['hooks'];
  /** Shorter delivery timeouts and leases for tests; production uses the defaults. */
  tuning?: ActivityDependencies['tuning'];
};

/** A worker polling settle's task queue; the caller runs it and closes the connection. */
export async function createWorker({ config, pool, hooks, tuning }: WorkerOptions) {
  installTemporalRuntime();
  const codePath = await workflowBundlePath();
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    workflowBundle: { codePath },
    maxCachedWorkflows: config.maxCachedWorkflows ?? MAX_CACHED_WORKFLOWS,
    activities: {
      ...createActivities({
        pool,
        hooks,
        tuning,
        config: {
          carrierUrl: config.carrierUrl,
          erpUrl: config.erpUrl,
          outboundSecret: config.outboundSecret,
          allowPrivateTargets: config.allowPrivateTargets,
        },
      }),
      ...(config.claimRetentionMs === undefined
        ? {}
        : createRetentionActivities({ pool, claimRetentionMs: config.claimRetentionMs })),
    },
    interceptors: { activity: [activityOutcomeInterceptor({ pool })] },
  });
  return { worker, connection };
}

/** `settle worker`: runs until SIGINT/SIGTERM, then drains in-flight tasks and closes. */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const { worker, connection } = await createWorker(options);
  logger.info({ taskQueue: options.config.taskQueue }, 'worker running');
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}
