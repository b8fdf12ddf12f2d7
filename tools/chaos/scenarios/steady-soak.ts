import { erpKey, openLoop, percentile } from '../../../testkit/load';
import { sleep, treeRssMb } from '../../../testkit/processes';
import { failureList, ensureWorkers, freshEvents, waitForDelivered, type Scenario } from './common';

/** The soak's length; `SETTLE_CHAOS_SOAK_MINUTES` shortens it to try the scenario out. */
const SOAK_MINUTES = Number(process.env.SETTLE_CHAOS_SOAK_MINUTES ?? 20);
/** How long the capacity is measured before the soak, 50 in flight. */
const CALIBRATION_MS = 20_000;
/** What "flat" allows on a shared machine: the last minute within this factor of the first (+ slack). */
const FLAT_FACTOR = 2;
const LATENCY_SLACK_MS = 50;
const RSS_FACTOR = 1.25;

type Minute = { ackMs: number[]; deliveredMs: number[]; rssMb: number };

/**
 * 20 minutes at half the capacity measured just before (the full form of `npm run
 * chaos` only). Nothing lost, and the last minute's ack p99, delivered p99 and worker + gateway
 * resident memory no higher than the first minute's beyond what a shared machine's noise explains.
 */
export const steadySoak: Scenario = {
  id: '13',
  name: `steady soak: ${SOAK_MINUTES} minutes at half the measured capacity, nothing lost or growing`,
  fullOnly: true,
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);

    // Capacity: acknowledged and delivered per second with 50 in flight.
    const calibration = await freshEvents(stack, 4_000);
    let next = 0;
    const calibrationStarted = Date.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (Date.now() - calibrationStarted < CALIBRATION_MS && next < calibration.events.length) {
          await provider.deliver(calibration.events[next++]!);
        }
      }),
    );
    const sentForCalibration = calibration.events.slice(0, next);
    await waitForDelivered(stack, sentForCalibration);
    const capacity = sentForCalibration.length / ((Date.now() - calibrationStarted) / 1000);
    const rate = Math.max(1, Math.round(capacity / 2));

    const durationMs = SOAK_MINUTES * 60_000;
    const { events } = await freshEvents(stack, Math.ceil(rate * (durationMs / 1000)) + 10);
    const minutes: Minute[] = Array.from({ length: SOAK_MINUTES }, () => ({
      ackMs: [],
      deliveredMs: [],
      rssMb: 0,
    }));
    const soakStarted = Date.now();
    const minuteOf = (at: number) => Math.min(SOAK_MINUTES - 1, Math.floor((at - soakStarted) / 60_000));
    let stopped = false;
    // Resident memory of the gateway and the workers, at the end of each minute (its last sample).
    const sampler = (async () => {
      while (!stopped) {
        const pids = [stack.gateway?.pid, ...stack.workers.map((worker) => worker.pid)];
        minutes[minuteOf(Date.now())]!.rssMb = pids.reduce<number>(
          (sum, pid) => sum + (pid ? treeRssMb(pid) : 0),
          0,
        );
        await sleep(1_000);
      }
    })();
    let acknowledged = 0;
    const sent = await openLoop(
      rate,
      durationMs,
      async (i) => {
        const event = events[i]!;
        const sentAt = Date.now();
        const reply = await provider.deliver(event);
        const minute = minutes[minuteOf(sentAt)]!;
        minute.ackMs.push(Date.now() - sentAt);
        if (reply.status !== 202) return;
        acknowledged += 1;
        const appliedAt = await stack.receiver.waitForApplied(erpKey(event.id));
        minute.deliveredMs.push(appliedAt - sentAt);
      },
      events.length,
    );
    stopped = true;
    await sampler;
    const used = events.slice(0, sent);
    const delivered = await waitForDelivered(stack, used);

    const first = minutes[0]!;
    const last = minutes[SOAK_MINUTES - 1]!;
    const p99 = (values: number[]) => Math.round(percentile(values, 99));
    const figures = {
      capacityPerSecond: Math.round(capacity * 10) / 10,
      rate,
      minutes: SOAK_MINUTES,
      sent,
      acknowledged,
      delivered,
      firstMinuteAckP99Ms: p99(first.ackMs),
      lastMinuteAckP99Ms: p99(last.ackMs),
      firstMinuteDeliveredP99Ms: p99(first.deliveredMs),
      lastMinuteDeliveredP99Ms: p99(last.deliveredMs),
      firstMinuteRssMb: Math.round(first.rssMb),
      lastMinuteRssMb: Math.round(last.rssMb),
    };
    check(acknowledged === sent, `${sent - acknowledged} events were never acknowledged`);
    check(delivered === sent, `${delivered} of ${sent} delivered`);
    // The last minute no higher than the first beyond what a shared machine's noise explains.
    const flat = (what: string, [before, after]: number[], factor = FLAT_FACTOR, slack = LATENCY_SLACK_MS) =>
      check(after! <= before! * factor + slack, `${what} grew: first minute ${before}, last minute ${after}`);
    flat('ack p99 (ms)', [figures.firstMinuteAckP99Ms, figures.lastMinuteAckP99Ms]);
    flat('delivered p99 (ms)', [figures.firstMinuteDeliveredP99Ms, figures.lastMinuteDeliveredP99Ms]);
    flat('gateway + worker RSS (MB)', [figures.firstMinuteRssMb, figures.lastMinuteRssMb], RSS_FACTOR, 0);
    return { figures, failures };
  },
};
