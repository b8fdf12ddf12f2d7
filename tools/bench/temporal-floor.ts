import { randomBytes } from 'node:crypto';
import { closedLoop } from '../../testkit/load';
import type { ProofStack } from '../../testkit/stack';

export const NOOP_TASK_QUEUE = 'bench-noop';

/**
 * T0: the Temporal floor on the same dev server: start a no-op workflow (one no-op activity) and wait
 * for its result, `concurrency` at a time. Workflows per second. T3 and T3L are the same floor with
 * P's shape (three steps), as activities and as local activities.
 */
export async function benchTemporalFloor(
  stack: ProofStack,
  count: number,
  concurrency: number,
  workflowType: 'noopWorkflow' | 'threeActivitiesWorkflow' | 'threeLocalActivitiesWorkflow' = 'noopWorkflow',
  prefix = floorPrefix(),
): Promise<{ workflowsPerSecond: number }> {
  const ms = await closedLoop(count, concurrency, async (i) => {
    await stack.client.workflow.execute(workflowType, {
      taskQueue: NOOP_TASK_QUEUE,
      workflowId: `${prefix}-${i}`,
      args: [],
    });
  });
  return { workflowsPerSecond: count / (ms / 1000) };
}

/** A fresh prefix for a floor run's workflow IDs (`<prefix>-<i>`). */
export const floorPrefix = () => `t0-${randomBytes(3).toString('hex')}`;

/** The workflow IDs of a floor run of `count` workflows under `prefix`. */
export const floorWorkflowIds = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
