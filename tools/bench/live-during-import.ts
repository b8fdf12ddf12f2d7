import { benchFixedLoad, loadEvents, preparePathEvents } from './full-path';
import { benchImport, prepareImport } from './import';
import type { ProofStack } from '../../testkit/stack';
import { bestRate, type RowRun } from './context';
import { round } from '../../testkit/processes';

/** How long to wait for `settle import` to admit its first lines before the live load starts. */
const IMPORT_START_DEADLINE_MS = 120_000;

/**
 * LI: live webhooks ahead of bulk work. The same open arrival rate twice: once with nothing else
 * running (the idle delivered p99), once while `settle import` admits a report of `importEvents`
 * events and the worker drains its backlog. Imported runs go to the bulk task queue, which the worker
 * serves with SETTLE_BULK_CONCURRENCY slots of its own (src/temporal/task-queues.ts), so live runs
 * never queue behind them in the worker.
 */
export async function benchLiveDuringImport(
  stack: ProofStack,
  ratePerSecond: number,
  durationMs: number,
  importEvents: number,
): Promise<Record<string, number>> {
  // Every event prepared first: shipment inserts stay out of both windows.
  const report = await prepareImport(stack, importEvents);
  const idleEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const liveEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const idle = await benchFixedLoad(stack, ratePerSecond, durationMs, idleEvents);
  const importedBefore = await importedCount(stack);
  const importing = benchImport(stack, report);
  // The live load starts once the import is admitting, so the two overlap from the first line.
  const deadline = Date.now() + IMPORT_START_DEADLINE_MS;
  while ((await importedCount(stack)) === importedBefore && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const live = await benchFixedLoad(stack, ratePerSecond, durationMs, liveEvents);
  const backlogAfterLive = importEvents - (await importedDelivered(stack, importedBefore));
  const imported = await importing;
  return {
    offeredPerSecond: ratePerSecond,
    idleDeliveredP99Ms: idle.deliveredP99Ms,
    importingDeliveredP99Ms: live.deliveredP99Ms,
    p99Ratio: live.deliveredP99Ms / idle.deliveredP99Ms,
    idleAckP99Ms: idle.ackP99Ms,
    importingAckP99Ms: live.ackP99Ms,
    /** Imported events not yet reconciled when the live window ended: the import was still draining. */
    importBacklogAtLiveEnd: Math.max(0, backlogAfterLive),
    importAccepted: imported.accepted,
    importUndelivered: imported.undelivered,
    errors: idle.errors + live.errors + imported.undelivered,
  };
}

async function importedCount(stack: ProofStack): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE source = 'import'`,
  );
  return rows[0]!.n;
}

/** Imported events (beyond those of earlier rows) whose claim is committed. */
async function importedDelivered(stack: ProofStack, before: number): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events e JOIN claims c USING (event_id) WHERE e.source = 'import'`,
  );
  return rows[0]!.n - before;
}

/** LI: live webhooks at a quarter of P's best rate, idle and then while an import's backlog drains. */
export const runLiveDuringImport: RowRun = async (ctx) => {
  const pMax = bestRate(ctx, 'P@');
  if (pMax === 0) return;
  const rate = round(pMax / 4, 1);
  const { loadSeconds, importEvents } = ctx.size;
  await ctx.measure(
    'LI',
    `live at ${rate} events/s for ${loadSeconds} s, idle then during a ${importEvents}-event import`,
    {
      run: () => benchLiveDuringImport(ctx.stack, rate, loadSeconds * 1000, importEvents),
      events: (figures) => figures.importAccepted! + 2 * rate * loadSeconds,
      reps: 1,
    },
  );
};
