import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import {
  describeDeployment,
  describeDeploymentVersion,
  type DeploymentView,
} from '../../src/app/deployments';
import { bulkTaskQueue } from '../../src/temporal/task-queues';
import { createWorker } from '../../src/worker/run';
import type { TestStack } from './harness';
import { waitFor } from './harness';

/** A settle worker of one build, started on a test stack's task queue; `stop()` drains it. */
export type VersionedWorker = { buildId: string; stop(): Promise<void> };

/** A Worker Deployment name of its own per test: tests sharing the dev server never meet. */
export function uniqueDeploymentName(): string {
  return `settle-test-${randomUUID().slice(0, 8)}`;
}

/**
 * Starts a worker polling as `buildId` of `deploymentName` (the workflow code of this checkout, or
 * the bundle at `workflowCodePath`), and resolves once Temporal lists the version in the deployment.
 */
export async function startVersionedWorker(
  stack: TestStack,
  deploymentName: string,
  buildId: string,
  workflowCodePath?: string,
): Promise<VersionedWorker> {
  const { worker, connection } = await createWorker({
    config: { ...stack.config, buildId, deploymentName },
    pool: stack.pool,
    workflowCodePath,
  });
  const running = worker.run();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    worker.shutdown();
    await running;
    await connection.close();
  };
  try {
    await waitFor(`build ${buildId} listed in ${deploymentName}`, () =>
      deploymentIfListed(stack.client, deploymentName, buildId),
    );
    // Temporal refuses to make current a build missing a task queue the current build serves.
    const queues = [stack.taskQueue, bulkTaskQueue(stack.taskQueue)].flatMap((name) =>
      (['workflow', 'activity'] as const).map((type) => `${name} ${type}`),
    );
    await waitFor(`build ${buildId} polling ${queues.join(', ')}`, async () => {
      // Refused (NOT_FOUND) while a task queue of the version is still being registered.
      const version = await describeDeploymentVersion(stack.client, deploymentName, buildId).catch(
        () => undefined,
      );
      if (!version) return false;
      const polled = new Set(version.task_queues.map((q) => `${q.name} ${q.type}`));
      return queues.every((queue) => polled.has(queue));
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { buildId, stop };
}

async function deploymentIfListed(
  client: Client,
  deploymentName: string,
  buildId: string,
): Promise<DeploymentView | undefined> {
  try {
    const view = await describeDeployment(client, deploymentName);
    return view.versions.some((v) => v.build_id === buildId) ? view : undefined;
  } catch {
    return undefined; // not yet created by the first poll
  }
}

/** Bundles a workflows module (a next build's code) into a file a worker can run. */
export async function bundleWorkflows(workflowsPath: string): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  const path = join(mkdtempSync(join(tmpdir(), 'settle-next-build-')), 'workflows.js');
  writeFileSync(path, code);
  return path;
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** The build a run is on, and how it follows a rollout, as Temporal describes it (what `settle inspect` shows). */
export async function runVersion(
  handle: WorkflowHandle,
): Promise<{ buildId: string | undefined; behavior: string | undefined }> {
  const { raw } = await handle.describe();
  const info = raw.workflowExecutionInfo?.versioningInfo;
  const behavior = info?.behavior ? ['', 'PINNED', 'AUTO_UPGRADE'][info.behavior] : undefined;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior };
}

/**
 * The history's workflow task failures (a nondeterminism error is one), and whether its first command
 * is a timer: the next build's payment code (next-version-workflows.ts) ran it, not the released code
 * (whose first command is the reconcile's marker).
 */
export async function historyFacts(
  handle: WorkflowHandle,
): Promise<{ workflowTaskFailures: string[]; nextBuildCode: boolean }> {
  const events = (await handle.fetchHistory()).events ?? [];
  const firstTask = events.findIndex((e) => e.workflowTaskCompletedEventAttributes);
  return {
    workflowTaskFailures: events
      .filter((e) => e.workflowTaskFailedEventAttributes)
      .map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? 'workflow task failed'),
    nextBuildCode: firstTask >= 0 && events[firstTask + 1]?.timerStartedEventAttributes != null,
  };
}
