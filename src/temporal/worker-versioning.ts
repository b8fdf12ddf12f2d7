import type { WorkerDeploymentOptions } from '@temporalio/worker';
import type { Config } from '../config';

/** What a worker needs to know to join a Worker Deployment. */
export type VersioningConfig = Partial<Pick<Config, 'buildId' | 'deploymentName'>>;

/**
 * The SDK's `workerDeploymentOptions` for a worker with SETTLE_BUILD_ID: it joins the deployment
 * SETTLE_DEPLOYMENT_NAME as that build, and each workflow follows a rollout as
 * src/workflows/versioning-behaviors.ts declares (PINNED for a workflow that declares nothing: it stays on
 * the build that started it, the choice that can never replay a history on code it did not run).
 * Without SETTLE_BUILD_ID: undefined, an unversioned worker, as before Worker Deployments.
 */
export function workerDeploymentOptions(config: VersioningConfig): WorkerDeploymentOptions | undefined {
  if (!config.buildId) return undefined;
  return {
    version: { deploymentName: config.deploymentName ?? 'settle', buildId: config.buildId },
    useWorkerVersioning: true,
    defaultVersioningBehavior: 'PINNED',
  };
}

/**
 * A versioned worker that stopped with `error`: the message names the version it was polling as, so
 * a worker that cannot register its version (Worker Deployments turned off on the server, the
 * deployment's limit of versions reached, a build ID the server refuses) exits saying so.
 */
export function versionedWorkerFailure(error: unknown, config: VersioningConfig): unknown {
  const options = workerDeploymentOptions(config);
  if (!options) return error;
  const { deploymentName, buildId } = options.version;
  const cause = error instanceof Error ? error.message : String(error);
  return new Error(
    `the worker stopped polling as build ${buildId} of Worker Deployment ${deploymentName} ` +
      `(SETTLE_BUILD_ID, SETTLE_DEPLOYMENT_NAME): ${cause}. If the server refused the version, see ` +
      'docs/operations.md, "Worker Deployments"; unset SETTLE_BUILD_ID to run unversioned.',
    { cause: error },
  );
}

/** Temporal's VersioningBehavior numbers (temporal.api.enums.v1), without loading the proto module. */
const BEHAVIORS: Record<number, 'pinned' | 'auto_upgrade'> = { 1: 'pinned', 2: 'auto_upgrade' };

type VersioningInfo = {
  behavior?: number | null;
  deploymentVersion?: { deploymentName?: string | null; buildId?: string | null } | null;
} | null;

/**
 * The build a run is on, from DescribeWorkflowExecution's versioningInfo (what the UI shows), for
 * `settle inspect`: `{ version }`, or nothing for a run of unversioned workers.
 */
export function runVersion(info: VersioningInfo | undefined): {
  version?: { deployment: string; build_id: string; behavior: 'pinned' | 'auto_upgrade' | null };
} {
  const version = info?.deploymentVersion;
  if (!version?.buildId) return {};
  return {
    version: {
      deployment: version.deploymentName ?? '',
      build_id: version.buildId,
      behavior: (info?.behavior && BEHAVIORS[info.behavior]) || null,
    },
  };
}
