import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  describeDeployment,
  describeDeploymentVersion,
  type DeploymentView,
} from '../../src/temporal/deployments';
import { bulkTaskQueue } from '../../src/temporal/task-queues';
import { createWorker } from '../../src/worker-runtime/create-worker';
import type { TestStack } from '../../testkit/harness';
import { waitFor } from '../../testkit/harness';

export {
  bundleWorkflows,
  historyFacts,
  NEXT_BUILD_WORKFLOWS,
  runVersion,
} from '../../testkit/workflow-builds';

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
