import { randomBytes } from 'node:crypto';
import { closedLoop } from '../../testkit/load';
import type { ProofStack } from '../../testkit/stack';
import type { BenchContext, Row, RowRun } from './context';

export const NOOP_TASK_QUEUE = 'bench-noop';

type FloorWorkflow = 'noopWorkflow' | 'threeActivitiesWorkflow' | 'threeLocalActivitiesWorkflow';

/**
 * T0: the Temporal floor on the same dev server: start a no-op workflow (one no-op activity) and wait
 * for its result, `concurrency` at a time. Workflows per second. T3 and T3L are the same floor with
 * P's shape (three steps), as activities and as local activities.
 */
export async function benchTemporalFloor(
  stack: ProofStack,
  count: number,
  concurrency: number,
  workflowType: FloorWorkflow = 'noopWorkflow',
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

/** A floor row: `workflows` runs of `workflowType`, `concurrency` at a time. */
function floorRow(
  { stack, row }: BenchContext,
  [id, what]: [string, string],
  concurrency: number,
  workflowType: FloorWorkflow,
  workflows: number,
): Row {
  return row(id, what, {
    prepare: async () => floorPrefix(),
    run: (prefix: string) => benchTemporalFloor(stack, workflows, concurrency, workflowType, prefix),
    events: workflows,
    workflowIds: (prefix) => ({ ids: floorWorkflowIds(prefix, workflows) }),
  });
}

/** T0 at `concurrency` in flight: a no-op workflow and a no-op activity. */
export const t0Row = (ctx: BenchContext, concurrency: number) =>
  floorRow(
    ctx,
    [`T0@${concurrency}`, `no-op workflow + no-op activity, ${concurrency} in flight`],
    concurrency,
    'noopWorkflow',
    ctx.size.floorWorkflows,
  );

/** T0@10, and T0@50 unless PE runs (it measures T0@50 in turn with PE@50). */
export const runT0: RowRun = async (ctx) => {
  await benchTemporalFloor(ctx.stack, ctx.size.warmup, 10);
  await ctx.measureInTurn([t0Row(ctx, 10)]);
  if (!ctx.wanted('PE')) await ctx.measureInTurn([t0Row(ctx, 50)]);
};

/** T3@50 (three no-op activities), and T3L@50 (P's shape: as local activities) returned for P's turn. */
export const runT3: RowRun = async (ctx) => {
  const half = ctx.size.floorWorkflows / 2;
  await benchTemporalFloor(ctx.stack, ctx.size.warmup, 50, 'threeActivitiesWorkflow');
  await ctx.measureInTurn([
    floorRow(
      ctx,
      ['T3@50', 'three no-op activities in sequence, 50 in flight'],
      50,
      'threeActivitiesWorkflow',
      half,
    ),
  ]);
  await benchTemporalFloor(ctx.stack, ctx.size.warmup, 50, 'threeLocalActivitiesWorkflow');
  return [
    floorRow(
      ctx,
      ['T3L@50', "P's shape: three no-op local activities, 50 in flight"],
      50,
      'threeLocalActivitiesWorkflow',
      half,
    ),
  ];
};
