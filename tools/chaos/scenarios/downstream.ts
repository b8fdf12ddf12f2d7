import { paymentWorkflowId } from '../../../src/domain/ids';
import { downstreamIdempotencyKey } from '../../../src/domain/outbox';
import type { PaymentWorkflowResult } from '../../../src/workflows';
import { erpKey } from '../../../testkit/load';
import type { Behaviour } from '../../../testkit/receiver';
import {
  failureList,
  ensureWorkers,
  freshEvents,
  receiverRecords,
  waitForDelivered,
  type Scenario,
  type ScenarioContext,
} from './common';

/** Runs `fn` with the receiver answering this scenario's keys (by prefix) with `answer`. */
async function withBehaviour<T>(
  ctx: ScenarioContext,
  prefix: string,
  answer: Behaviour,
  fn: () => Promise<T>,
) {
  const previous = ctx.stack.receiver.behaviour;
  ctx.stack.receiver.behaviour = (request, index) =>
    request.key.startsWith(prefix) ? answer(request, index) : previous(request, index);
  try {
    return await fn();
  } finally {
    ctx.stack.receiver.behaviour = previous;
  }
}

export const throttledWithRetryAfter: Scenario = {
  id: '8',
  name: '429 with Retry-After',
  async run(ctx) {
    const { stack, provider } = ctx;
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events, prefix } = await freshEvents(stack, 2);
    const delivered = await withBehaviour(
      ctx,
      prefix,
      ({ attempt }) => (attempt === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }),
      async () => {
        await Promise.all(events.map((event) => provider.deliver(event)));
        return waitForDelivered(stack, events);
      },
    );
    const records = receiverRecords(stack, prefix);
    const gaps = records.map((r) => (r.arrivals[1] ?? Infinity) - r.arrivals[0]!);
    check(delivered === events.length, `${delivered} of ${events.length} delivered`);
    check(records.length === events.length * 2, `expected ${events.length * 2} keys, saw ${records.length}`);
    check(Math.min(...gaps) >= 1_900, `a retry came ${Math.min(...gaps)} ms after a Retry-After of 2 s`);
    check(
      records.every((r) => r.applied === 1),
      'a key was not applied exactly once',
    );
    return {
      figures: { keys: records.length, minRetryGapMs: Math.min(...gaps), maxRetryGapMs: Math.max(...gaps) },
      failures,
    };
  },
};

export const appliedThen504: Scenario = {
  id: '9',
  name: 'the receiver applies, then answers 504',
  async run(ctx) {
    const { stack, provider } = ctx;
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events, prefix } = await freshEvents(stack, 2);
    const delivered = await withBehaviour(
      ctx,
      prefix,
      ({ attempt }) => (attempt === 1 ? { status: 504, apply: true } : { status: 200 }),
      async () => {
        await Promise.all(events.map((event) => provider.deliver(event)));
        return waitForDelivered(stack, events);
      },
    );
    // The ERP key is applied on the first (504) attempt; wait for the retry that the receiver refuses.
    const deadline = Date.now() + 60_000;
    const records = () => receiverRecords(stack, prefix);
    while (records().some((r) => r.requests < 2) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const seen = records();
    check(delivered === events.length, `${delivered} of ${events.length} delivered`);
    check(
      seen.every((r) => r.requests >= 2),
      'an ambiguous call was not retried',
    );
    check(
      seen.every((r) => r.applied === 1),
      'a key was not applied exactly once',
    );
    check(
      seen.every((r) => r.bodies.size === 1),
      'a retry changed the request body',
    );
    return {
      figures: {
        keys: seen.length,
        requests: seen.reduce((sum, r) => sum + r.requests, 0),
        repeatsRefusedByKey: seen.reduce((sum, r) => sum + r.repeatsRefused, 0),
        applied: seen.reduce((sum, r) => sum + r.applied, 0),
      },
      failures,
    };
  },
};

export const permanentRefusalMidSaga: Scenario = {
  id: '10',
  name: 'a permanent 4xx mid-saga',
  async run(ctx) {
    const { stack, provider } = ctx;
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events, prefix } = await freshEvents(stack, 1);
    const event = events[0]!;
    const result: PaymentWorkflowResult = await withBehaviour(
      ctx,
      prefix,
      ({ key }) => (key === erpKey(event.id) ? { status: 422 } : { status: 200 }),
      async () => {
        await provider.deliver(event);
        return stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
      },
    );
    const { rows: ledger } = await stack.pool.query<{ kind: string }>(
      'SELECT kind FROM ledger_entries WHERE event_id = $1::text ORDER BY entry_id',
      [event.id],
    );
    const { rows: claim } = await stack.pool.query<{ outcome: string }>(
      'SELECT outcome FROM claims WHERE event_id = $1::text',
      [event.id],
    );
    const { rows: shipment } = await stack.pool.query<{ hold_status: string }>(
      'SELECT hold_status FROM shipments WHERE shipment_id = $1::text',
      [event.data.shipment_id],
    );
    const release = stack.receiver.keys.get(downstreamIdempotencyKey(event.id, 'carrier', 'release_hold'));
    const rehold = stack.receiver.keys.get(downstreamIdempotencyKey(event.id, 'carrier', 'rehold'));
    const refused = stack.receiver.keys.get(erpKey(event.id));
    check(result.compensated && result.outcome === 'needs_review', 'the workflow did not compensate');
    check(claim[0]?.outcome === 'needs_review', `claim outcome ${claim[0]?.outcome}`);
    check(
      ledger.map((row) => row.kind).join(',') === 'capture,reversal',
      `ledger ${ledger.map((r) => r.kind)}`,
    );
    check(release?.applied === 1 && rehold?.applied === 1, 'release and re-hold not each applied once');
    check(refused?.applied === 0 && refused.requests === 1, 'the refused call was retried or applied');
    check(shipment[0]?.hold_status === 'held', 'the shipment was not held again');
    return {
      figures: {
        outcome: claim[0]?.outcome ?? 'none',
        ledger: ledger.map((row) => row.kind).join('+'),
        refusedCalls: refused?.requests ?? 0,
        reholds: rehold?.applied ?? 0,
      },
      failures,
    };
  },
};
