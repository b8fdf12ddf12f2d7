import { paymentWorkflowId } from '../../src/domain/ids';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { benchFixedLoad, claimedAt, loadEvents, preparePathEvents } from './full-path';
import { benchImport, prepareImport } from './import';
import { erpKey, percentile } from '../../testkit/load';
import { round } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import type { Answer, ReceivedRequest } from '../../testkit/receiver';
import type { RowRun } from './context';

/**
 * The ERP as a rate-limited API: at most `limit` calls in each wall-clock second, `429` with
 * `Retry-After: 1` above it (counted as `throttled`). Calls to the carrier are always taken.
 */
export class RateLimitedErp {
  readonly perSecond = new Map<number, number>();
  throttled = 0;

  constructor(readonly limit: number) {}

  readonly behaviour = (request: ReceivedRequest): Answer => {
    if (request.path !== '/erp') return { status: 200 };
    const second = Math.floor(request.at / 1000);
    const calls = (this.perSecond.get(second) ?? 0) + 1;
    this.perSecond.set(second, calls);
    if (calls > this.limit) {
      this.throttled += 1;
      return { status: 429, headers: { 'retry-after': '1' } };
    }
    return { status: 200 };
  };

  /** The most calls the ERP saw in one second since `since` (ms since the epoch). */
  busiestSecond(since: number): number {
    let most = 0;
    for (const [second, calls] of this.perSecond)
      if (second * 1000 >= since - 999) most = Math.max(most, calls);
    return most;
  }
}

/**
 * PR: `events` imported at once against an ERP that allows `limit` calls a second (RateLimitedErp),
 * with SETTLE_ERP_RATE_LIMIT set to it on the workers: the busiest second's calls, the 429s, every
 * entry's deliveries and the drain time.
 */
export async function benchPressure(
  stack: ProofStack,
  erp: RateLimitedErp,
  events: number,
  importEnv: Record<string, string>,
): Promise<Record<string, number>> {
  const report = await prepareImport(stack, events);
  const throttledBefore = erp.throttled;
  const started = Date.now();
  const imported = await benchImport(stack, report, importEnv);
  const arrivals = report.events.map((event) => stack.receiver.keys.get(erpKey(event.id)));
  const first = Math.min(...arrivals.map((record) => record?.arrivals[0] ?? Infinity));
  const last = Math.max(...arrivals.map((record) => record?.appliedAt ?? 0));
  return {
    limitPerSecond: erp.limit,
    busiestSecondCalls: erp.busiestSecond(started),
    drainSeconds: (last - first) / 1000,
    drainBoundSeconds: (1.2 * events) / erp.limit,
    throttled: erp.throttled - throttledBefore,
    appliedTwice: arrivals.filter((record) => (record?.applied ?? 0) > 1).length,
    callsPerEntry: arrivals.reduce((sum, record) => sum + (record?.requests ?? 0), 0) / Math.max(1, events),
    importAccepted: imported.accepted,
    undelivered: imported.undelivered,
    errors: imported.undelivered,
  };
}

/**
 * PRL: the same limited ERP, live webhooks at `liveRate` a second idle and then alongside an import of
 * `events`: the live events' delivered p99, idle and during the import.
 */
export async function benchPressureLive(
  stack: ProofStack,
  erp: RateLimitedErp,
  events: number,
  liveRate: number,
  durationMs: number,
  importEnv: Record<string, string>,
): Promise<Record<string, number>> {
  const report = await prepareImport(stack, events);
  const idleEvents = await preparePathEvents(stack, loadEvents(liveRate, durationMs));
  const liveEvents = await preparePathEvents(stack, loadEvents(liveRate, durationMs));
  const idle = await benchFixedLoad(stack, liveRate, durationMs, idleEvents);
  const throttledBefore = erp.throttled;
  const started = Date.now();
  const importing = benchImport(stack, report, importEnv);
  // The live window starts once the ERP is busy with the import's backlog.
  const busy = () => report.events.some((event) => stack.receiver.keys.has(erpKey(event.id)));
  while (!busy() && Date.now() - started < 120_000) await new Promise((resolve) => setTimeout(resolve, 100));
  const live = await benchFixedLoad(stack, liveRate, durationMs, liveEvents);
  const imported = await importing;
  if (process.env.SETTLE_BENCH_PHASES === '1') {
    await printLivePhases(stack, 'idle', idleEvents.slice(0, idle.sent));
    await printLivePhases(stack, 'importing', liveEvents.slice(0, live.sent));
  }
  return {
    offeredPerSecond: liveRate,
    idleDeliveredP99Ms: idle.deliveredP99Ms,
    importingDeliveredP99Ms: live.deliveredP99Ms,
    p99Ratio: live.deliveredP99Ms / idle.deliveredP99Ms,
    idleAckP99Ms: idle.ackP99Ms,
    importingAckP99Ms: live.ackP99Ms,
    idleCommitP99Ms: idle.commitP99Ms,
    importingCommitP99Ms: live.commitP99Ms,
    busiestSecondCalls: erp.busiestSecond(started),
    throttled: erp.throttled - throttledBefore,
    importAccepted: imported.accepted,
    undelivered: imported.undelivered,
    errors: idle.errors + live.errors + imported.undelivered,
  };
}

/**
 * Where live events' time went before their claim, from their runs' histories (with
 * SETTLE_BENCH_PHASES=1, printed, not a figure): the start to its workflow task's dispatch to a
 * worker, that dispatch to the reconcile's transaction, and that to the task's completion.
 */
async function printLivePhases(stack: ProofStack, label: string, events: PaymentEvent[]): Promise<void> {
  const claimed = await claimedAt(stack, events);
  const ms = (time: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    Number(time?.seconds ?? 0) * 1000 + (time?.nanos ?? 0) / 1e6;
  const phases: Record<string, number[]> = {
    'started → dispatched': [],
    'dispatched → claimed': [],
    'claimed → task completed': [],
  };
  for (const event of events) {
    const history = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).fetchHistory();
    const all = history.events ?? [];
    const dispatched = all.find((e) => e.workflowTaskStartedEventAttributes)?.eventTime;
    const completed = all.find((e) => e.workflowTaskCompletedEventAttributes)?.eventTime;
    const claim = claimed.get(event.id);
    if (!dispatched || !completed || claim === undefined) continue;
    phases['started → dispatched']!.push(ms(dispatched) - ms(all[0]?.eventTime));
    phases['dispatched → claimed']!.push(claim - ms(dispatched));
    phases['claimed → task completed']!.push(ms(completed) - claim);
  }
  for (const [phase, each] of Object.entries(phases))
    process.stderr.write(
      `bench: PRL ${label}, ${phase}: p50 ${round(percentile(each, 50), 1)} ms, p99 ${round(percentile(each, 99), 1)} ms\n`,
    );
}

/** PR and PRL: the calls a second the ERP allows (and SETTLE_ERP_RATE_LIMIT), and PRL's live rate. */
export const PRESSURE_LIMIT = 20;
const PRESSURE_LIVE_RATE = 2;

/** PR and PRL, last: two workers with the ERP's limit in place of the worker every row above used. */
export const runPressure: RowRun = async (ctx) => {
  const { stack, size } = ctx;
  const erp = new RateLimitedErp(PRESSURE_LIMIT);
  stack.receiver.behaviour = erp.behaviour;
  await stack.stopWorkers();
  const limited = { SETTLE_ERP_RATE_LIMIT: String(PRESSURE_LIMIT) };
  ctx.processes.worker = await stack.startWorker(limited, ctx.profile());
  // Measured as a worker too: a child of the bench not named here would count as the bench's CPU.
  ctx.processes['worker-2'] = await stack.startWorker(limited, ctx.profile());
  // `settle import` runs with the workers' limits, as it would where settle is deployed, and paces
  // its runs by them (src/app/import-pace.ts); SETTLE_BENCH_IMPORT_UNPACED=1 measures it without.
  const importEnv = process.env.SETTLE_BENCH_IMPORT_UNPACED === '1' ? {} : limited;
  const allowing = `the ERP allowing ${PRESSURE_LIMIT}/s`;
  if (ctx.wanted('PR'))
    await ctx.measure('PR', `${size.pressureEvents} imported at once, ${allowing}`, {
      run: () => benchPressure(stack, erp, size.pressureEvents, importEnv),
      events: size.pressureEvents,
      reps: 1,
    });
  if (ctx.wanted('PRL'))
    await ctx.measure(
      'PRL',
      `live at ${PRESSURE_LIVE_RATE}/s idle, then during an import of ${size.pressureEvents}, ${allowing}`,
      {
        run: () =>
          benchPressureLive(
            stack,
            erp,
            size.pressureEvents,
            PRESSURE_LIVE_RATE,
            size.pressureLiveSeconds * 1000,
            importEnv,
          ),
        events: (figures) => figures.importAccepted! + 2 * PRESSURE_LIVE_RATE * size.pressureLiveSeconds,
        reps: size.pressureLiveReps,
      },
    );
};
