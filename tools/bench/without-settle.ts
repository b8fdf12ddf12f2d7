import { spawnTs } from '../../testkit/processes';
import type { BenchContext, Row, RowRun } from './context';
import { benchFullPath, preparePathEvents } from './full-path';

/**
 * P's work without settle: a plain workflow of three local activities (T3L's shape), receiver and
 * worker in one process (support/plain-consumer.ts), given settle's operator view unless
 * SETTLE_BENCH_PLAIN_VIEW says otherwise; the same events, receiver and load generator as P. Starts
 * it, warms it up and returns its row at 50 in flight; `stopPlainConsumer` stops it.
 */
export async function plainConsumerRow(
  ctx: BenchContext,
  id: string,
  what: string,
  env: Record<string, string> = {},
): Promise<Row> {
  const { stack, size } = ctx;
  const child = await spawnTs(
    'plain-consumer',
    [...ctx.profile(), 'tools/bench/support/plain-consumer.ts'],
    stack.env({
      SETTLE_BENCH_PLAIN_VIEW: process.env.SETTLE_BENCH_PLAIN_VIEW ?? 'full',
      ...env,
      ...ctx.workerEnv,
    }),
    (output) => output.includes('plain consumer ready'),
  );
  ctx.processes['plain-consumer'] = child;
  const path = stack.throughGateway(/plain consumer ready (\S+)/.exec(child.output())![1]!);
  await benchFullPath(path, await preparePathEvents(stack, size.warmup), 50, 'bench_plain_claims');
  return ctx.row(id, what, {
    prepare: () => preparePathEvents(stack, size.pathEvents),
    run: (events) => benchFullPath(path, events, 50, 'bench_plain_claims'),
    events: size.pathEvents,
    workflowIds: (events) => ({ ids: events.map((event) => `plain:${event.id}`) }),
  });
}

export async function stopPlainConsumer(ctx: BenchContext): Promise<void> {
  await ctx.processes['plain-consumer']?.stop();
  ctx.processes['plain-consumer'] = undefined;
}

/** T3W@50, returned to be measured in turn with P@50; the consumer stops after that turn. */
export const runT3W: RowRun = async (ctx) => {
  ctx.afterTurn(() => stopPlainConsumer(ctx));
  return [
    await plainConsumerRow(ctx, 'T3W@50', "P's work without settle: T3L's shape doing it, 50 in flight"),
  ];
};
