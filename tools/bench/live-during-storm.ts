import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchFixedLoad, loadEvents, preparePathEvents } from './full-path';
import { spawnTs } from '../../testkit/processes';
import type { PaymentEvent } from '../../src/domain/payment-event';
import type { ProofStack } from '../../testkit/stack';
import { bestRate, type RowRun } from './context';
import { round } from '../../testkit/processes';

/** The storm's rate as a multiple of the live rate (SPEC.md, "What an event costs": many times it). */
export const STORM_FACTOR = 10;

/** How long the storm runs before the live window opens, so that the live events meet it at full rate. */
const STORM_LEAD_MS = 1_000;

type StormResult = {
  sent: number;
  perSecond: number;
  ackP99Ms: number;
  duplicates: number;
  serverErrors: number;
  unavailable: number;
  other: number;
};

/**
 * LS: live webhooks during a provider's retry storm. The same open arrival rate twice: once with
 * nothing else running (the idle delivered p99), once while every event of the earlier rows is
 * delivered again (a new webhook message, the same event), over and over, at STORM_FACTOR times the
 * live rate, from a second before the live window opens until it closes. The storm is sent by a
 * process of its own (support/storm-sender.ts). Every storm delivery must be answered `200
 * duplicate`: no 5xx, no 503 (table.ts holds the goals).
 */
export async function benchLiveDuringStorm(
  stack: ProofStack,
  earlier: PaymentEvent[],
  ratePerSecond: number,
  durationMs: number,
): Promise<Record<string, number>> {
  if (earlier.length === 0) throw new Error('LS needs the events of earlier rows to deliver again');
  const idleEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const liveEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const idle = await benchFixedLoad(stack, ratePerSecond, durationMs, idleEvents);

  const folder = mkdtempSync(join(tmpdir(), 'settle-storm-'));
  try {
    const planFile = join(folder, 'plan.json');
    writeFileSync(
      planFile,
      JSON.stringify({
        gatewayUrl: stack.gatewayUrl,
        secret: stack.secret,
        events: earlier,
        ratePerSecond: STORM_FACTOR * ratePerSecond,
        durationMs: STORM_LEAD_MS + durationMs,
      }),
    );
    const sender = await spawnTs(
      'storm sender',
      ['tools/bench/support/storm-sender.ts', planFile],
      { ...process.env },
      (output) => output.includes('storm started'),
    );
    await new Promise((resolve) => setTimeout(resolve, STORM_LEAD_MS));
    const live = await benchFixedLoad(stack, ratePerSecond, durationMs, liveEvents);
    const exit = await sender.exited;
    const line = /storm result (.+)/.exec(sender.output())?.[1];
    if (exit !== 0 || !line) throw new Error(`the storm sender failed (${exit}): ${sender.errors()}`);
    const storm = JSON.parse(line) as StormResult;
    return {
      offeredPerSecond: ratePerSecond,
      stormOfferedPerSecond: STORM_FACTOR * ratePerSecond,
      stormPerSecond: storm.perSecond,
      stormSent: storm.sent,
      stormDuplicates: storm.duplicates,
      storm5xx: storm.serverErrors + storm.unavailable,
      storm503: storm.unavailable,
      stormAckP99Ms: storm.ackP99Ms,
      idleDeliveredP99Ms: idle.deliveredP99Ms,
      stormDeliveredP99Ms: live.deliveredP99Ms,
      p99Ratio: live.deliveredP99Ms / idle.deliveredP99Ms,
      idleAckP99Ms: idle.ackP99Ms,
      liveAckP99DuringStormMs: live.ackP99Ms,
      liveSent: idle.sent + live.sent,
      errors: idle.errors + live.errors + (storm.sent - storm.duplicates),
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** LS, once: P's and L's events again at STORM_FACTOR × a live rate of a quarter of P's best. */
export const runLiveDuringStorm: RowRun = async (ctx) => {
  const pMax = bestRate(ctx, 'P@');
  if (pMax === 0 || !ctx.finished.length) return;
  const rate = round(pMax / 4, 1);
  const earlier = [...ctx.finished, ...ctx.loadFinished];
  const { loadSeconds } = ctx.size;
  await ctx.measure(
    'LS',
    `live at ${rate} events/s for ${loadSeconds} s, idle then during a retry storm of ${earlier.length} events at ${STORM_FACTOR} ×`,
    {
      run: () => benchLiveDuringStorm(ctx.stack, earlier, rate, loadSeconds * 1000),
      events: (figures) => figures.liveSent! + figures.stormSent!,
      reps: 1,
    },
  );
};
