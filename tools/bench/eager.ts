import { round } from '../../testkit/processes';
import { bestRate, runsOf, type RowRun } from './context';
import { benchFixedLoad, benchFullPath, loadEvents, preparePathEvents } from './full-path';
import { benchTemporalFloor, t0Row } from './temporal-floor';
import { plainConsumerRow, stopPlainConsumer } from './without-settle';

/**
 * PE, T3WE and LE: `settle serve` (gateway and worker in one process on one connection, runs started
 * eagerly). PE@10, then PE@50 in turn with T0@50 and with T3WE@50 (the plain consumer started
 * eagerly, as serve starts its runs), then LE@50%, open arrivals at half PE's best rate.
 */
export const runEager: RowRun = async (ctx) => {
  const { stack, size } = ctx;
  const started = await stack.startServe({}, ctx.profile('serve'));
  ctx.processes.serve = started.child;
  const eager = stack.throughGateway(started.gatewayUrl);
  const eagerRow = (concurrency: number) =>
    ctx.row(
      `PE@${concurrency}`,
      `P through settle serve (eager start, one process), ${concurrency} in flight`,
      {
        prepare: () => preparePathEvents(stack, size.pathEvents),
        run: (events) => benchFullPath(eager, events, concurrency),
        events: size.pathEvents,
        workflowIds: runsOf,
      },
    );
  try {
    await benchFullPath(eager, await preparePathEvents(stack, size.warmup), 10);
    await ctx.measureInTurn([eagerRow(10)]);
    // The no-op worker warmed again first: serve idles during T0's turns, as settle's worker idles during PE's.
    if (ctx.wanted('T0')) await benchTemporalFloor(stack, size.warmup, 50);
    const against = ctx.wanted('T0') ? [t0Row(ctx, 50)] : [];
    if (ctx.wanted('T3WE'))
      against.push(
        await plainConsumerRow(
          ctx,
          'T3WE@50',
          "P's work without settle, T3L's shape, started eagerly, 50 in flight",
          { SETTLE_BENCH_PLAIN_EAGER: '1' },
        ),
      );
    // Warmed at the concurrency its turn measures, as the rows it is compared with are (T3WE, T0).
    await benchFullPath(eager, await preparePathEvents(stack, size.warmup), 50);
    await ctx.measureInTurn([...against, eagerRow(50)]);
    // Stopped before LE's row, which it would share the machine with.
    await stopPlainConsumer(ctx);
    const eagerMax = bestRate(ctx, 'PE@');
    if (eagerMax > 0) {
      const rate = round(eagerMax / 2, 1);
      const ms = size.loadSeconds * 1000;
      await ctx.measure('LE@50%', `open arrivals at ${rate} events/s through settle serve`, {
        prepare: () => preparePathEvents(stack, loadEvents(rate, ms)),
        run: (events) => benchFixedLoad(eager, rate, ms, events),
        events: (figures) => figures.sent,
        workflowIds: (events, figures) => runsOf(events.slice(0, figures.sent)),
      });
    }
  } finally {
    await stopPlainConsumer(ctx).catch(() => {});
    await started.child.stop().catch(() => {});
    ctx.processes.serve = undefined;
  }
};
