import { HELD_MAX_WAIT_MS, PROBE_EVERY_MAX_MS } from '../../../src/activities/target-gate';
import { parsePrometheusText, sumOf } from '../../../src/metrics/prometheus-text';
import { erpKey } from '../../../testkit/load';
import { sleep } from '../../../testkit/processes';
import type { ProofStack } from '../../../testkit/stack';
import {
  deliverAtRate,
  failureList,
  freshEvents,
  RECOVERY_TIMEOUT_MS,
  waitForDelivered,
  type Scenario,
} from './common';

/** Events a second sent through the outage: a quarter of what two cores take (docs/performance.md). */
const RATE_PER_SECOND = 4;
/** The most probes an outage of `ms` may see: a quarter of a second after the first failure, doubling to 10 s. */
function probesAtMost(ms: number): number {
  let probes = 0;
  for (let gap = 250, at = 0; at <= ms; at += gap, gap = Math.min(gap * 2, 10_000)) probes += 1;
  return probes + 1;
}

/**
 * The ERP down (503, no Retry-After) under a steady 25 % load: 5 minutes in the full form (with
 * SETTLE_ERP_OPEN_AFTER at its default, 1m), 20 s in the short one (2s). Settle must call it at most
 * once per event sent plus one probe per interval, show it open (settle_target_open, the alert's
 * expression), and once it answers again deliver every entry once by key, drain within a bound (a
 * probe interval and twice a held call's longest wait) and close by itself. The
 * workers are restarted with the scenario's SETTLE_ERP_OPEN_AFTER, and again without it after.
 */
export const targetDown: Scenario = {
  id: 'down',
  name: 'the ERP down (503) under 25 % load',
  async run({ stack, provider, short }) {
    const { check, failures } = failureList();
    const outageMs = short ? 20_000 : 5 * 60_000;
    const openAfter = short ? '2s' : '1m';
    await restartWorkers(stack, { SETTLE_ERP_OPEN_AFTER: openAfter });
    const { events, prefix } = await freshEvents(stack, Math.ceil((outageMs / 1000) * RATE_PER_SECOND));
    let down = true;
    const previous = stack.receiver.behaviour;
    stack.receiver.behaviour = (request, index) =>
      request.path === '/erp' && request.key.startsWith(prefix) && down
        ? { status: 503 }
        : previous(request, index);
    let sawOpen = false;
    let downSince = 0;
    let upAt = 0;
    try {
      downSince = Date.now();
      const sending = deliverAtRate(provider, events, RATE_PER_SECOND, Infinity);
      while (Date.now() - downSince < outageMs) {
        sawOpen ||= (await targetOpen(stack, 'erp')) === 1;
        await sleep(1_000);
      }
      await sending;
      down = false;
      upAt = Date.now();
      const delivered = await waitForDelivered(stack, events);
      check(delivered === events.length, `${delivered} of ${events.length} entries delivered`);
      const erpRecords = events.map((event) => stack.receiver.keys.get(erpKey(event.id)));
      check(
        erpRecords.every((record) => record?.applied === 1),
        'an ERP entry was not applied exactly once',
      );
      const callsDuringOutage = erpRecords.reduce(
        (sum, record) => sum + (record?.arrivals.filter((at) => at >= downSince && at < upAt).length ?? 0),
        0,
      );
      const bound = events.length + probesAtMost(upAt - downSince);
      check(callsDuringOutage <= bound, `${callsDuringOutage} calls to the ERP while down, above ${bound}`);
      check(sawOpen, 'settle_target_open{target="erp"} never 1 while the ERP was down');
      // After it returns: the first probe within a probe interval; a row held just before that comes
      // back within a held call's longest wait (jittered), and may be held once more; then processing.
      const drainS = (Math.max(...erpRecords.map((record) => record?.appliedAt ?? 0)) - upAt) / 1000;
      const drainBoundS = (PROBE_EVERY_MAX_MS + 2 * 1.2 * HELD_MAX_WAIT_MS) / 1000 + 30;
      check(
        drainS <= drainBoundS,
        `the backlog drained ${Math.round(drainS)} s after the ERP returned, above ${drainBoundS} s`,
      );
      const closedBy = Date.now() + RECOVERY_TIMEOUT_MS;
      while ((await targetOpen(stack, 'erp')) !== 0 && Date.now() < closedBy) await sleep(500);
      check((await targetOpen(stack, 'erp')) === 0, 'the ERP still open after it returned');
      return {
        figures: {
          outageS: Math.round((upAt - downSince) / 1000),
          eventsSent: events.length,
          callsDuringOutage,
          callBound: bound,
          alertExpressionFired: sawOpen ? 'yes' : 'no',
          drainAfterReturnS: Math.round(drainS),
          drainBoundS,
        },
        failures,
      };
    } finally {
      down = false;
      stack.receiver.behaviour = previous;
      await restartWorkers(stack, {});
    }
  },
};

/** Two workers with `env`, in place of those running. */
async function restartWorkers(stack: ProofStack, env: Record<string, string>): Promise<void> {
  await stack.stopWorkers();
  await stack.startWorker(env);
  await stack.startWorker(env);
}

/** settle_target_open{target}, the SettleTargetOpen alert's expression, from the gateway's /metrics. */
async function targetOpen(stack: ProofStack, target: string): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  }).catch(() => undefined);
  if (!response?.ok) return -1;
  return sumOf(parsePrometheusText(await response.text()), 'settle_target_open', { target });
}
