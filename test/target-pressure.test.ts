/**
 * Downstream pressure across worker processes (docs/delivery.md, "Downstream pressure"): two workers,
 * each its own process, share the ERP's SETTLE_ERP_RATE_LIMIT and SETTLE_ERP_MAX_IN_FLIGHT, honour one
 * 429 Retry-After together, and stop calling an ERP that is down but for one probe at a time, showing
 * it open (settle exceptions, the gauge) until a probe succeeds. Every entry is delivered once, under
 * its own Idempotency-Key, whatever the ERP did.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { admitTargetCall, recheckTargetCall } from '../src/activities/target-gate';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { downstreamIdempotencyKey } from '../src/domain/outbox';
import { parsePrometheusText, sumOf } from '../src/metrics/prometheus-text';
import {
  createTestDatabase,
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { startReceiver, targetUrlVariables, type Receiver, type ReceivedRequest } from '../testkit/receiver';
import { startChildWorker, type ChildWorker } from './support/child-worker';
import { importEvents, runSettle, stackEnv } from './support/settle-cli';

const RATE_LIMIT = 10;
const MAX_IN_FLIGHT = 2;
const OPEN_AFTER_S = 2;

let stack: TestStack;
let receiver: Receiver;
const workers: ChildWorker[] = [];
/** What the ERP answers now; the carrier always takes its call. */
let erp: (request: ReceivedRequest) => {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
} = () => ({ status: 200 });

before(async () => {
  receiver = await startReceiver((request) => (request.path === '/erp' ? erp(request) : { status: 200 }));
  stack = await startTestStack({ worker: false });
  const env = {
    ...targetUrlVariables(receiver.url),
    SETTLE_ERP_RATE_LIMIT: String(RATE_LIMIT),
    SETTLE_ERP_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
    SETTLE_ERP_OPEN_AFTER: `${OPEN_AFTER_S}s`,
  };
  // Two worker processes: a limit kept in either one's memory would let through twice as much.
  for (let i = 0; i < 2; i += 1)
    workers.push(await startChildWorker(stack, env, { requestTimeoutMs: 5_000 }));
});
after(async () => {
  for (const worker of workers) await worker.kill();
  await stack?.close();
  await receiver?.close();
});

/** `n` captured payments, each for a shipment of its own, added to settle. */
async function paymentsForNewShipments(n: number) {
  const events = Array.from({ length: n }, () => paymentEvent({ shipmentId: uniqueId('SHP') }));
  await addShipments(
    stack.pool,
    events.map((event) => event.data.shipment_id),
  );
  return events;
}

/** Sends `n` captured payments at once; resolves with the ERP keys (one ledger entry each). */
async function sendPayments(n: number): Promise<string[]> {
  const events = await paymentsForNewShipments(n);
  const answers = await Promise.all(events.map((event) => postWebhook(stack, event)));
  for (const answer of answers) assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return events.map((event) => downstreamIdempotencyKey(event.id, 'erp', 'post_ledger_entry'));
}

/** Waits for every key's effect at the ERP and proves each was applied once. */
async function deliveredOnce(keys: string[]): Promise<void> {
  await waitFor(`${keys.length} ledger entries at the ERP`, async () =>
    keys.every((key) => receiver.keys.get(key)?.applied === 1),
  );
  for (const key of keys) {
    const record = receiver.keys.get(key)!;
    assert.equal(record.applied, 1, `${key}: applied once`);
    assert.equal(record.bodies.size, 1, `${key}: every call the same request`);
  }
}

/**
 * Asserts that no event's run did more than the happy path's one workflow task but for one durable
 * activity (a call handed over, which waits there): a call held through retries would show a
 * `timer` and an `upsert` of settle's view. (TemporalChangeVersion, the SDK's own upsert for a
 * patch, is not settle's view.)
 */
async function assertHeldOnlyInActivity(events: { id: string }[]): Promise<void> {
  for (const event of events) {
    const history = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).fetchHistory();
    const kinds = (history.events ?? []).flatMap((e) => {
      if (e.timerStartedEventAttributes) return ['timer'];
      if (e.activityTaskScheduledEventAttributes) return ['activity'];
      const upserted = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      return upserted && Object.keys(upserted).some((key) => key !== 'TemporalChangeVersion')
        ? ['upsert']
        : [];
    });
    assert.ok(kinds.length === 0 || kinds.join() === 'activity', `${event.id}: ${kinds.join(', ')}`);
  }
}

const erpCalls = (keys: string[]) =>
  receiver.requests.filter((request) => request.path === '/erp' && keys.includes(request.key));

describe('downstream pressure, shared by two worker processes', () => {
  test('the ERP never gets more than its rate limit a second, nor more calls at once than its limit', async () => {
    erp = () => ({ status: 200, delayMs: 150 });
    const keys = await sendPayments(40);
    await deliveredOnce(keys);
    const calls = erpCalls(keys);
    assert.equal(calls.length, keys.length, 'one call per entry: none was refused');
    const perSecond = new Map<number, number>();
    for (const call of calls)
      perSecond.set(Math.floor(call.at / 1000), (perSecond.get(Math.floor(call.at / 1000)) ?? 0) + 1);
    const busiest = Math.max(...perSecond.values());
    assert.ok(busiest <= RATE_LIMIT * 1.1, `${busiest} calls in one second, above ${RATE_LIMIT}/s`);
    const span = calls.at(-1)!.at - calls[0]!.at;
    assert.ok(
      span >= ((keys.length - 1) / RATE_LIMIT) * 1000 * 0.9,
      `40 calls in ${span} ms: faster than the limit`,
    );
    // At no arrival were more calls open than the limit (each open from its arrival to its answer).
    for (const call of calls) {
      const open = calls.filter(
        (other) => other.at <= call.at && (other.answeredAt ?? Infinity) > call.at,
      ).length;
      assert.ok(open <= MAX_IN_FLIGHT, `${open} calls in flight at once, above ${MAX_IN_FLIGHT}`);
    }
  });

  test('an import to the limited ERP waits for its turns, not through retries: no timer, no upsert, one activity at most', async () => {
    erp = () => ({ status: 200 });
    const events = await paymentsForNewShipments(24);
    const run = await importEvents(events, stackEnv(stack));
    assert.equal(run.code, 0, run.stderr);
    const keys = events.map((event) => downstreamIdempotencyKey(event.id, 'erp', 'post_ledger_entry'));
    await deliveredOnce(keys);
    const calls = erpCalls(keys);
    assert.equal(calls.length, keys.length, 'one call per entry');
    const span = calls.at(-1)!.at - calls[0]!.at;
    assert.ok(span >= ((keys.length - 1) / RATE_LIMIT) * 1000 * 0.9, `${keys.length} calls in ${span} ms`);
    // A run held through retries would show a timer and its `retrying` state, and cost their actions;
    // a run whose first pass found no free slot hands the call to the durable activity, which waits.
    await assertHeldOnlyInActivity(events);
  });

  test("an import given the workers' SETTLE_ERP_RATE_LIMIT starts its runs no faster than the ERP takes calls", async () => {
    erp = () => ({ status: 200 });
    const events = await paymentsForNewShipments(12);
    const run = await importEvents(events, stackEnv(stack, { SETTLE_ERP_RATE_LIMIT: String(RATE_LIMIT) }));
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { counts: { accepted: number }; elapsed_ms: number };
    assert.equal(summary.counts.accepted, events.length);
    // The import itself went at the ERP's pace, not as fast as Temporal takes starts.
    const paced = ((events.length - 1) / RATE_LIMIT) * 1000 * 0.9;
    assert.ok(summary.elapsed_ms >= paced, `${events.length} runs started in ${summary.elapsed_ms} ms`);
    const keys = events.map((event) => downstreamIdempotencyKey(event.id, 'erp', 'post_ledger_entry'));
    await deliveredOnce(keys);
    assert.equal(erpCalls(keys).length, keys.length, 'one call per entry');
    await assertHeldOnlyInActivity(events);
  });

  test('a 429 with Retry-After pauses every worker until it has passed; then one probe, then the rest', async () => {
    let pausedAt: number | undefined;
    erp = (request) => {
      if (pausedAt === undefined) {
        pausedAt = request.at;
        return { status: 429, headers: { 'retry-after': '3' } };
      }
      return { status: 200 };
    };
    const keys = await sendPayments(12);
    await deliveredOnce(keys);
    const calls = erpCalls(keys);
    const during = calls.filter((call) => call.at > pausedAt! + 100 && call.at < pausedAt! + 3_000);
    assert.deepEqual(
      during.map((call) => call.at - pausedAt!),
      [],
      'calls during the 3 s the ERP asked for',
    );
    // Calls already on their way when the 429 came may arrive with it; after the pause, one per entry.
    assert.ok(calls.length <= keys.length + 2, `${calls.length} calls for ${keys.length} entries`);
  });

  test('an ERP down past SETTLE_ERP_OPEN_AFTER is open: one probe at a time, shown, and closed by a success', async () => {
    let down = true;
    erp = () => (down ? { status: 503 } : { status: 200 });
    const keys = await sendPayments(10);
    const downSince = Date.now();
    const listed = await waitFor('the ERP listed as target_unavailable', async () => {
      const run = await runSettle(['exceptions', '--kind', 'target_unavailable', '--json'], stackEnv(stack));
      assert.equal(run.code, 0, run.stderr);
      const rows = (
        JSON.parse(run.stdout) as { exceptions: { event_id: string; target: string; next_step: string }[] }
      ).exceptions;
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(listed[0]!.event_id, 'target:erp');
    assert.equal(listed[0]!.target, 'erp');
    assert.match(listed[0]!.next_step, /probe succeeds/);
    assert.equal(await targetOpen('erp'), 1);
    // Hold the outage a little longer: only probes reach the ERP, one at a time.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const outage = Date.now() - downSince;
    const duringOutage = erpCalls(keys);
    // Each entry's first call may go before the first failure is recorded; after it, probes only, the
    // first a quarter of a second after a failure, each next one twice as long after (up to 10 s).
    const probesAtMost = Math.ceil(Math.log2(outage / 250 + 1)) + 1;
    assert.ok(
      duringOutage.length <= keys.length + probesAtMost,
      `${duringOutage.length} calls in ${outage} ms of outage for ${keys.length} entries`,
    );
    for (const call of duringOutage) {
      const overlapping = duringOutage.filter(
        (other) => other !== call && other.at >= call.at && other.at < (call.answeredAt ?? Infinity),
      );
      if (call.at > downSince + 1_000) assert.deepEqual(overlapping, [], 'two probes at once');
    }

    down = false;
    await deliveredOnce(keys);
    await waitFor('the exception closed by itself', async () => {
      const run = await runSettle(['exceptions', '--kind', 'target_unavailable', '--json'], stackEnv(stack));
      return (JSON.parse(run.stdout) as { exceptions: unknown[] }).exceptions.length === 0;
    });
    assert.equal(await targetOpen('erp'), 0);
  });
});

/** settle_target_open{target} from the gateway's /metrics. */
async function targetOpen(target: string): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  return sumOf(parsePrometheusText(await response.text()), 'settle_target_open', { target });
}

describe("the gate's slots: live calls before bulk ones", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.drop();
  });
  /** One call a second: slots a second apart, far wider than the statements take. */
  const admit = (bulk: boolean, maxWaitMs: number) =>
    admitTargetCall(db.pool, {
      target: 'erp',
      bulk,
      ratePerSecond: 1,
      maxInFlight: undefined,
      maxWaitMs,
      holdMs: 0,
      leaseMs: 5_000,
      outboxId: null,
    });
  const schedule = async () =>
    (
      await db.pool.query<{ next: string; listed: number }>(
        `SELECT next_slot_at::text AS next, cardinality(bulk_slots) AS listed FROM target_pressure WHERE target = 'erp'`,
      )
    ).rows[0]!;

  test('a live call takes the slot a bulk call reserved; the bulk call asks again and takes the one after', async () => {
    const free = await admit(true, 1_000);
    assert.ok(free.held === null && free.waitMs === 0 && free.slot === null, 'a free slot goes at once');
    const reserved = await admit(true, 1_000);
    assert.ok(reserved.held === null && reserved.slot !== null, 'the next slot is reserved');
    const before = await schedule();
    assert.equal(before.listed, 1);

    const live = await admit(false, 5_000);
    assert.equal(live.held, null);
    assert.ok(
      live.waitMs <= reserved.waitMs,
      `the live call waits ${live.waitMs} ms, the bulk call's slot was ${reserved.waitMs} ms away`,
    );
    assert.deepEqual(await schedule(), { next: before.next, listed: 0 }, 'the same slots: one changed hands');

    assert.equal(await recheckTargetCall(db.pool, 'erp', null, null, reserved.slot), 'lent');
    const after = await admit(true, 2_000);
    assert.ok(after.held === null && after.slot !== null, 'the bulk call takes the slot after');
    assert.ok(after.waitMs > live.waitMs, `${after.waitMs} ms, after the live call's ${live.waitMs}`);
    assert.equal(await recheckTargetCall(db.pool, 'erp', null, null, after.slot), null, 'still its own');
    assert.equal((await schedule()).listed, 0, 'a used slot is no longer listed');
  });

  test("with no bulk call's slot to take, a live call waits for the next slot", async () => {
    const next = Date.parse((await schedule()).next);
    const live = await admit(false, 5_000);
    assert.equal(live.held, null);
    const { now } = (await db.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!;
    assert.ok(live.waitMs >= next - now.getTime() - 5, `${live.waitMs} ms, the next slot was later`);
    assert.equal(await recheckTargetCall(db.pool, 'erp', null, null, null), null);
  });
});
