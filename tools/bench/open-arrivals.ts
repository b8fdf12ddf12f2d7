import { round } from '../../testkit/processes';
import { bestRate, runsOf, type RowRun } from './context';
import { benchFixedLoad, loadEvents, preparePathEvents } from './full-path';

/** L@25% and L@50%: open arrivals at those shares of P's best rate. */
export const runL: RowRun = async (ctx) => {
  const { stack, size } = ctx;
  const pMax = bestRate(ctx, 'P@');
  if (pMax === 0) return;
  const ms = size.loadSeconds * 1000;
  for (const share of [25, 50]) {
    const rate = round((pMax * share) / 100, 1);
    await ctx.measure(`L@${share}%`, `open arrivals at ${rate} events/s for ${size.loadSeconds} s`, {
      prepare: () => preparePathEvents(stack, loadEvents(rate, ms)),
      run: async (events) => {
        const figures = await benchFixedLoad(stack, rate, ms, events);
        ctx.loadFinished.push(...events.slice(0, figures.sent));
        return figures;
      },
      events: (figures) => figures.sent,
      workflowIds: (events, figures) => runsOf(events.slice(0, figures.sent)),
    });
  }
};
