import {
  type ActivityInterceptorsFactory,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type WorkerOptions as SdkWorkerOptions,
} from '@temporalio/worker';
import type pg from 'pg';
import { createActivities, type ActivityDependencies } from '../activities';
import { activityOutcomeInterceptor } from './outcome-interceptor';
import { signingSecrets, targetUrls, type TargetConfigKey, type TargetSecretKey } from '../domain/outbox';
import { targetLimitsConfig, type TargetLimitKey } from '../domain/target-limits';
import { createPurgeActivities } from '../activities/purge';
import { createRecoveryActivities } from '../activities/recovery-sweep-events';
import { CONFIG_DEFAULTS, loadSettings, withProviderDefaults, type Config } from '../config';
import type { RecoverySource } from '../providers/recovery-source';
import type { ProviderConfigOf, ProviderModule, ProviderVariables } from '../providers/module';
import {
  PROVIDER_NAMES,
  PROVIDERS,
  RECOVERY_PROVIDER_NAMES,
  type PROVIDER_VARIABLES,
} from '../providers/registry';
import type { AccountPolicy } from '../domain/payment-rules';
import type { RecoveryProvider } from '../domain/workflow-contracts';
import { clientOnWorkerConnection } from '../client';
import { logger } from '../lib/logger';
import { redactIds, redactMeta } from '../temporal/redact-ids';
import { DRAIN_GRACE_MS, onShutdown } from '../lib/shutdown';
import { activeTracing } from '../tracing/tracing';
import { startDrainingTemporalMetrics, temporalMetricsBuffer } from '../metrics/temporal-metrics';
import {
  classifyTemporalError,
  describeTemporalConnection,
  temporalConnectionOptions,
  type TemporalConnectionConfig,
  requireNamespace,
  TemporalSetupError,
  usesTls,
} from '../temporal/connection';
import { settleDataConverter } from '../temporal/data-converter';
import { bulkTaskQueue } from '../temporal/task-queues';
import { workflowBundlePath } from './workflow-bundle';
import { workerDeploymentOptions, type VersioningConfig } from '../temporal/worker-versioning';

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
export function installTemporalRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = loadSettings().temporalLogLevel;
  Runtime.install({
    // Signals belong to lib/shutdown.ts, which drains each worker itself (worker.shutdown()).
    shutdownSignals: [],
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
    Pick<Config, 'temporalNamespace' | 'taskQueue'> &
    VersioningConfig & {
      claimRetentionMs?: number;
    } & Partial<
      Pick<
        Config,
        | TargetConfigKey
        | TargetSecretKey
        | TargetLimitKey
        | 'outboundSecret'
        | 'reminderSecret'
        | 'allowPrivateTargets'
        | 'maxCachedWorkflows'
        | 'bulkConcurrency'
        | 'payloadKeys'
        | 'providerMode'
        | keyof typeof PROVIDER_VARIABLES
      >
    >;
  pool: pg.Pool;
  /** Activity interceptors run inside settle's own (tests use one to lose a completion after COMMIT). */
  interceptors?: ActivityInterceptorsFactory[];
  /** Shorter delivery timeouts and leases for tests; production uses the defaults. */
  tuning?: ActivityDependencies['tuning'];
  /** SDK worker settings tried by the benchmarks (testkit/worker-process.ts); none in production. */
  sdkOptions?: Pick<SdkWorkerOptions, 'maxCachedWorkflows' | 'reuseV8Context' | 'workflowThreadPoolSize'>;
  /** A bundle of other workflow code (the rollout tests' next version); production runs src/workflows. */
  workflowCodePath?: string;
};

/** Seconds a starting worker gives Temporal to answer before it gives up with the cause. */
const CONNECT_DEADLINE_MS = 10_000;

/**
 * Connects and checks the namespace exists (DescribeNamespace) before any worker is built, so a
 * missing namespace, refused credentials or a TLS mismatch end the start with a message naming the
 * cause instead of a worker that never polls.
 */
async function connectWorker(config: WorkerOptions['config']): Promise<NativeConnection> {
  const context = {
    namespace: config.temporalNamespace,
    connection: describeTemporalConnection(config),
    tls: usesTls(config),
  };
  let connection: NativeConnection;
  try {
    connection = await withTimeout(
      NativeConnection.connect(temporalConnectionOptions(config)),
      CONNECT_DEADLINE_MS,
    );
  } catch (error) {
    throw new TemporalSetupError(classifyTemporalError(error, context));
  }
  try {
    await requireNamespace(clientOnWorkerConnection(connection, config), {
      timeoutMs: CONNECT_DEADLINE_MS,
      tls: context.tls,
      connection: context.connection,
      unreachable: 'refuse',
    });
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
  return connection;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The two SDK workers of one settle worker process, on one connection: `live` polls the configured
 * task queue with the SDK's default slots, `bulk` polls `<queue>-bulk` (task-queues.ts) with
 * SETTLE_BULK_CONCURRENCY workflow-task slots. Each has its own slots and its own local-activity
 * queue, so an import's backlog waits in Temporal, never in front of a live event inside the worker.
 * They run, drain and stop together.
 */
export class SettleWorker {
  constructor(
    readonly live: Worker,
    readonly bulk: Worker,
  ) {}

  /** Resolves when both have stopped; if one fails, the other is shut down and the failure thrown. */
  async run(): Promise<void> {
    const runs = [this.live.run(), this.bulk.run()];
    try {
      await Promise.all(runs);
    } catch (error) {
      this.shutdown();
      await Promise.allSettled(runs);
      throw error;
    }
  }

  /** Runs until `until` settles (or a worker fails), then drains both, as the SDK's `Worker.runUntil`. */
  async runUntil<T>(until: () => Promise<T>): Promise<T> {
    const running = this.run();
    try {
      return await Promise.race([
        until(),
        running.then(() => Promise.reject(new Error('the worker stopped before its work was done'))),
      ]);
    } finally {
      this.shutdown();
      await running.catch(() => {});
    }
  }

  /** Starts the drain of both (the SDK's shutdown); safe to call more than once. */
  shutdown(): void {
    for (const worker of [this.live, this.bulk]) if (worker.getState() === 'RUNNING') worker.shutdown();
  }

  /** RUNNING while either still polls. */
  getState(): ReturnType<Worker['getState']> {
    return this.bulk.getState() === 'RUNNING' ? 'RUNNING' : this.live.getState();
  }
}

/** The providers this worker can sweep: those with API credentials (src/temporal/recovery-schedule.ts). */
function recoverySources(config: WorkerOptions['config']) {
  const providerConfig = withProviderDefaults(config) as ProviderConfigOf<ProviderVariables>;
  const sources: Partial<Record<RecoveryProvider, RecoverySource>> = {};
  for (const name of RECOVERY_PROVIDER_NAMES) {
    const recovery = (PROVIDERS[name] as ProviderModule).recovery;
    if (recovery?.on(providerConfig)) sources[name] = recovery.source(providerConfig);
  }
  return sources;
}

/** Each provider's account rule, from its module and the configuration. */
function accountPolicy(config: WorkerOptions['config']): AccountPolicy {
  const providerConfig = withProviderDefaults(config) as ProviderConfigOf<ProviderVariables>;
  const rules = PROVIDER_NAMES.flatMap((name) => {
    const rule = (PROVIDERS[name] as ProviderModule).accountRule?.(providerConfig);
    return rule ? [[name, rule] as const] : [];
  });
  return Object.fromEntries(rules);
}

/** The settle worker (live and bulk, polling settle's task queues); the caller runs it and closes the connection. */
export async function createWorker({
  config,
  pool,
  interceptors = [],
  tuning,
  sdkOptions,
  workflowCodePath,
}: WorkerOptions) {
  installTemporalRuntime();
  // With payload keys, payloads and failure messages are encrypted (temporal/data-converter.ts); the
  // codec runs outside the workflow sandbox, the failure converter inside too (the bundle's variant).
  const dataConverter = settleDataConverter(config);
  // With tracing on, the bundle with settle's workflow tracing interceptors (workflow-bundle.ts).
  const tracing = activeTracing();
  const codePath =
    workflowCodePath ??
    (await workflowBundlePath({
      encodedFailures: dataConverter !== undefined,
      traced: tracing !== undefined,
    }));
  const connection = await connectWorker(config);
  const activities = {
    ...createActivities({
      pool,
      tuning,
      accounts: accountPolicy(config),
      config: {
        ...targetUrls(config),
        ...signingSecrets(config),
        ...targetLimitsConfig(config),
        allowPrivateTargets: config.allowPrivateTargets,
      },
    }),
    ...(config.claimRetentionMs === undefined
      ? {}
      : createPurgeActivities({ pool, claimRetentionMs: config.claimRetentionMs })),
    // Registered without a key too: a sweep that reaches such a worker fails naming the variable.
    ...createRecoveryActivities({
      pool,
      client: clientOnWorkerConnection(connection, config),
      taskQueue: config.taskQueue,
      sources: recoverySources(config),
      providerMode: config.providerMode,
    }),
  };
  const untraced = {
    connection,
    namespace: config.temporalNamespace,
    workflowBundle: { codePath },
    dataConverter,
    activities,
    interceptors: { activity: [activityOutcomeInterceptor, ...interceptors] },
    // Under lib/shutdown.ts's deadline: activities still running then are cancelled (local ones by
    // untilDrained, same grace), so the drain ends.
    shutdownGraceTime: DRAIN_GRACE_MS,
    // With SETTLE_BUILD_ID, both poll as that build of the Worker Deployment (temporal/worker-versioning.ts).
    workerDeploymentOptions: workerDeploymentOptions(config),
  } satisfies Partial<SdkWorkerOptions>;
  const shared = tracing ? tracing.workerOptions(untraced) : untraced;
  const live = await Worker.create({
    ...shared,
    taskQueue: config.taskQueue,
    // Unset only where a tool or test builds its configuration by hand.
    maxCachedWorkflows: config.maxCachedWorkflows ?? CONFIG_DEFAULTS.maxCachedWorkflows,
    ...sdkOptions,
  });
  const slots = config.bulkConcurrency ?? CONFIG_DEFAULTS.bulkConcurrency!;
  const bulk = await Worker.create({
    ...shared,
    taskQueue: bulkTaskQueue(config.taskQueue),
    maxConcurrentWorkflowTaskExecutions: slots,
    maxConcurrentLocalActivityExecutions: 2 * slots,
    maxConcurrentActivityTaskExecutions: 2 * slots,
    // A payment run closes in its first workflow task, so its pollers belong on the normal queue
    // (docs/performance.md, "Bulk worker pollers"). The cache must stay (local activities need their
    // run cached); it holds the runs mid-step.
    nonStickyToStickyPollRatio: 1,
    maxCachedWorkflows: Math.max(2, 4 * slots),
    ...sdkOptions,
  });
  return { worker: new SettleWorker(live, bulk), connection };
}

/**
 * Runs a created worker until SIGINT/SIGTERM (lib/shutdown.ts), then drains it; `stopFirst` (a gateway
 * sharing the process, `settle serve`) stops before the drain. Resolves when the worker has stopped.
 */
export async function runUntilStopped(
  worker: SettleWorker,
  name: string,
  stopFirst?: () => Promise<void>,
): Promise<void> {
  const running = worker.run();
  const off = onShutdown(name, async () => {
    await stopFirst?.();
    worker.shutdown();
    await running.catch(() => {});
  });
  try {
    await running;
  } finally {
    off();
  }
}
