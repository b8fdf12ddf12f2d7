import type { Client } from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';
import { GrpcStatus } from './grpc-status';

/**
 * The Worker Deployment settle's versioned workers join (SETTLE_BUILD_ID, SETTLE_DEPLOYMENT_NAME), as
 * `settle deployment` shows and changes it: which build is current, which ramps and how far, and
 * which older builds still have runs (DRAINING) or none (DRAINED: their workers can stop). The same
 * calls as `temporal worker deployment …` and the UI's Deployments page.
 */

/** A version's place in the deployment, as Temporal reports it. */
export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unspecified';
/** Whether runs still pin an old version: `drained` once none do (checked every few minutes by Temporal). */
export type Drainage = 'draining' | 'drained' | null;

export type DeploymentVersionView = {
  build_id: string;
  status: VersionStatus;
  drainage: Drainage;
  created_at: string | null;
};

export type DeploymentView = {
  deployment: string;
  current_build_id: string | null;
  ramping: { build_id: string; percentage: number } | null;
  versions: DeploymentVersionView[];
};

export type VersionTaskQueueView = {
  name: string;
  type: 'workflow' | 'activity' | 'nexus';
  backlog: number | null;
};

export type DeploymentVersionDetail = DeploymentVersionView & {
  deployment: string;
  ramp_percentage: number;
  drainage_checked_at: string | null;
  /** The task queues its workers poll, with the tasks waiting for this version on each. */
  task_queues: VersionTaskQueueView[];
};

/** A refusal Temporal gave, in words an operator can act on (the CLI prints it without a stack). */
export class DeploymentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeploymentError';
  }
}

const { WorkerDeploymentVersionStatus: Status, VersionDrainageStatus, TaskQueueType } = temporal.api.enums.v1;

function versionStatus(status: number | null | undefined): VersionStatus {
  switch (status) {
    case Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE:
      return 'inactive';
    case Status.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT:
      return 'current';
    case Status.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING:
      return 'ramping';
    case Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING:
      return 'draining';
    case Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED:
      return 'drained';
    default:
      return 'unspecified';
  }
}

function drainage(status: number | null | undefined): Drainage {
  if (status === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING) return 'draining';
  if (status === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED) return 'drained';
  return null;
}

function time(timestamp: google.protobuf.ITimestamp | null | undefined): string | null {
  if (!timestamp?.seconds) return null;
  return new Date(Number(timestamp.seconds) * 1000 + Math.floor((timestamp.nanos ?? 0) / 1e6)).toISOString();
}

/** The gRPC status code of a refused call (the client's errors carry it as `code`, or their cause's). */
function grpcCode(error: unknown): number | undefined {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  const found = code ?? cause?.code;
  return typeof found === 'number' ? found : undefined;
}

/** Turns Temporal's refusals of these calls into DeploymentErrors naming what to do. */
async function asked<T>(what: string, deployment: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = grpcCode(error);
    const message = error instanceof Error ? error.message : String(error);
    if (code === GrpcStatus.NOT_FOUND) {
      throw new DeploymentError(
        `${what}: Temporal knows no such Worker Deployment or version (${message}). A version exists ` +
          `once a worker with SETTLE_BUILD_ID (and SETTLE_DEPLOYMENT_NAME=${deployment}) has polled.`,
      );
    }
    if (code === GrpcStatus.FAILED_PRECONDITION || code === GrpcStatus.INVALID_ARGUMENT)
      throw new DeploymentError(`${what}: Temporal refused: ${message}`);
    throw error;
  }
}

export async function describeDeployment(client: Client, deploymentName: string): Promise<DeploymentView> {
  const { workerDeploymentInfo: info } = await asked('describe', deploymentName, () =>
    client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName }),
  );
  const routing = info?.routingConfig;
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    deployment: deploymentName,
    current_build_id: routing?.currentDeploymentVersion?.buildId || null,
    ramping: ramping ? { build_id: ramping, percentage: routing?.rampingVersionPercentage ?? 0 } : null,
    versions: (info?.versionSummaries ?? [])
      .map((summary) => ({
        build_id: summary.deploymentVersion?.buildId ?? '',
        status: versionStatus(summary.status),
        drainage: drainage(summary.drainageStatus ?? summary.drainageInfo?.status),
        created_at: time(summary.createTime),
      }))
      .sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '')),
  };
}

export async function describeDeploymentVersion(
  client: Client,
  deploymentName: string,
  buildId: string,
): Promise<DeploymentVersionDetail> {
  const response = await asked(`describe version ${buildId}`, deploymentName, () =>
    client.workflowService.describeWorkerDeploymentVersion({
      namespace: client.options.namespace,
      deploymentVersion: { deploymentName, buildId },
      reportTaskQueueStats: true,
    }),
  );
  const info = response.workerDeploymentVersionInfo;
  return {
    deployment: deploymentName,
    build_id: buildId,
    status: versionStatus(info?.status),
    drainage: drainage(info?.drainageInfo?.status),
    drainage_checked_at: time(info?.drainageInfo?.lastCheckedTime),
    created_at: time(info?.createTime),
    ramp_percentage: info?.rampPercentage ?? 0,
    task_queues: (response.versionTaskQueues ?? []).map((queue) => ({
      name: queue.name ?? '',
      type:
        queue.type === TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
          ? 'activity'
          : queue.type === TaskQueueType.TASK_QUEUE_TYPE_NEXUS
            ? 'nexus'
            : 'workflow',
      backlog:
        queue.stats?.approximateBacklogCount != null ? Number(queue.stats.approximateBacklogCount) : null,
    })),
  };
}

/**
 * Makes `buildId` current: every new run, and every AUTO_UPGRADE run at its next task, goes to it;
 * pinned runs stay where they are. Temporal refuses a version no worker polls (a typo, pods not up
 * yet) unless `allowNoPollers`, which a rollout never needs.
 */
export async function setCurrentVersion(
  client: Client,
  deploymentName: string,
  buildId: string,
  options: { allowNoPollers?: boolean } = {},
): Promise<void> {
  await asked(`set-current ${buildId}`, deploymentName, () =>
    client.workflowService.setWorkerDeploymentCurrentVersion({
      namespace: client.options.namespace,
      deploymentName,
      buildId,
      identity: client.options.identity,
      allowNoPollers: options.allowNoPollers === true,
    }),
  );
}

/**
 * Sends `percentage` of new runs (and of AUTO_UPGRADE runs' tasks) to `buildId`, the rest to the
 * current version; `buildId` null ends the ramp (a rollback: runs already started on the ramping
 * version are pinned there and finish there).
 */
export async function setRampingVersion(
  client: Client,
  deploymentName: string,
  buildId: string | null,
  percentage: number,
  options: { allowNoPollers?: boolean } = {},
): Promise<void> {
  if (buildId !== null && !(Number.isFinite(percentage) && percentage >= 0 && percentage <= 100)) {
    throw new DeploymentError(`the ramp percentage must be from 0 to 100, not ${percentage}`);
  }
  await asked(buildId ? `ramp ${buildId}` : 'ramp --stop', deploymentName, () =>
    client.workflowService.setWorkerDeploymentRampingVersion({
      namespace: client.options.namespace,
      deploymentName,
      buildId: buildId ?? '',
      percentage: buildId === null ? 0 : percentage,
      identity: client.options.identity,
      allowNoPollers: options.allowNoPollers === true,
    }),
  );
}

/**
 * Resolves once `buildId` is drained (no open run is pinned to it, so its workers can stop), asking
 * every `everyMs`; throws if it is current or ramping (it would never drain), or after `timeoutMs`.
 */
export async function waitDrained(
  client: Client,
  deploymentName: string,
  buildId: string,
  options: { timeoutMs: number; everyMs?: number; signal?: AbortSignal },
): Promise<DeploymentVersionDetail> {
  const started = Date.now();
  for (;;) {
    const version = await describeDeploymentVersion(client, deploymentName, buildId);
    if (version.status === 'drained' || version.drainage === 'drained') return version;
    if (version.status === 'current' || version.status === 'ramping') {
      throw new DeploymentError(
        `build ${buildId} is ${version.status}: it drains only once another version is current and it ramps no longer`,
      );
    }
    if (Date.now() - started > options.timeoutMs) {
      throw new DeploymentError(
        `build ${buildId} is still ${version.status} after ${Math.round(options.timeoutMs / 1000)} s ` +
          `(drainage ${version.drainage ?? 'unknown'}, last checked ${version.drainage_checked_at ?? 'never'}): ` +
          'runs are still pinned to it; `settle deployment describe` lists them by version (docs/operations.md)',
      );
    }
    if (options.signal?.aborted) throw new DeploymentError('stopped before the version drained');
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 2_000));
  }
}
