import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { inspectEvent, type EventInspection } from '../src/app/inspect';
import type { PaymentWorkflowResult } from '../src/workflows';
import { startChildWorker, type ChildWorker } from './support/child-worker';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
  startStackWithReceivers,
} from '../testkit/harness';
import { useCleanups } from '../testkit/hooks';
import { startReceiver, type Behaviour, type Receiver } from '../testkit/receiver';

/** Everything one test started, closed after it whatever happened. */
const cleanups = useCleanups();

type Setup = { stack: TestStack; carrier: Receiver; erp: Receiver; shipmentId: string };

async function setUp(
  carrierBehaviour: Behaviour,
  options: { worker?: boolean; requestTimeoutMs?: number } = {},
): Promise<Setup> {
  const { stack, carrier, erp, close } = await startStackWithReceivers({
    carrier: carrierBehaviour,
    stack: {
      worker: options.worker,
      tuning: options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : undefined,
    },
  });
  cleanups.push(close);
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  return { stack, carrier, erp, shipmentId };
}

async function settle(
  setup: Setup,
): Promise<{ eventId: string; result: PaymentWorkflowResult; view: EventInspection }> {
  const event = paymentEvent({ shipmentId: setup.shipmentId, type: 'payment.settled' });
  assert.equal((await postWebhook(setup.stack, event)).status, 202);
  const result: PaymentWorkflowResult = await setup.stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();
  const view = (await inspectEvent(setup.stack.pool, setup.stack.client, event.id))!;
  return { eventId: event.id, result, view };
}

function delivery(view: EventInspection, target: string) {
  const found = view.deliveries.find((row) => row.target === target);
  assert.ok(found, `no ${target} delivery`);
  return found;
}

describe('the fast path', () => {
  test('a delivered event runs its three steps in one local activity: no activity task, one workflow task', async () => {
    const setup = await setUp(() => ({ status: 200 }));
    const { eventId, result, view } = await settle(setup);
    assert.equal(result.outcome, 'applied');
    assert.deepEqual(
      view.deliveries.map((row) => [row.target, row.status, row.attempts]),
      [
        ['carrier', 'delivered', 1],
        ['erp', 'delivered', 1],
      ],
    );
    const history = await setup.stack.client.workflow.getHandle(paymentWorkflowId(eventId)).fetchHistory();
    const events = history.events ?? [];
    const markers = events.map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
    // One marker for the first pass (reconcile, carrier release, ERP entry), after the one patch
    // marker of patched('reconcile-and-deliver'), in the same task.
    assert.deepEqual(markers, ['core_patch', 'core_local_activity']);
    assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0);
    assert.equal(events.filter((e) => e.workflowTaskCompletedEventAttributes).length, 1);
  });
});

describe('Retry-After', () => {
  test('429 with Retry-After: 2 twice, then 200: every gap at least 2 s, one key, one effect', async () => {
    const setup = await setUp((_request, index) =>
      index < 2 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    const { eventId, result, view } = await settle(setup);

    assert.equal(result.outcome, 'applied');
    const arrivals = setup.carrier.requests.map((request) => request.at);
    assert.equal(arrivals.length, 3);
    for (let i = 1; i < arrivals.length; i += 1) {
      // The retry policy's own first interval is 1 s: only the header explains a 2 s gap.
      assert.ok(arrivals[i]! - arrivals[i - 1]! >= 2_000, `gap ${i}: ${arrivals[i]! - arrivals[i - 1]!} ms`);
    }
    const key = `${eventId}:carrier:release_hold`;
    assert.deepEqual(
      setup.carrier.requests.map((request) => request.key),
      [key, key, key],
    );
    assert.deepEqual(setup.carrier.effects, [key]);
    assert.deepEqual(
      { status: delivery(view, 'carrier').status, attempts: delivery(view, 'carrier').attempts },
      { status: 'delivered', attempts: 3 },
    );
    assert.equal(view.shipment?.hold_status, 'released');
    assert.equal(delivery(view, 'erp').status, 'delivered');
    assert.deepEqual(setup.erp.effects, [`${eventId}:erp:post_ledger_entry`]);
  });
});

describe('an ambiguous answer', () => {
  test('applied then 504: the retry carries the same key and the receiver records one effect', async () => {
    const setup = await setUp((_request, index) =>
      index === 0 ? { status: 504, apply: true } : { status: 200 },
    );
    const { eventId, view } = await settle(setup);

    const key = `${eventId}:carrier:release_hold`;
    assert.deepEqual(
      setup.carrier.requests.map((request) => request.key),
      [key, key],
    );
    assert.deepEqual(setup.carrier.effects, [key]);
    const carrier = delivery(view, 'carrier');
    assert.deepEqual(
      { status: carrier.status, attempts: carrier.attempts, last_error: carrier.last_error },
      { status: 'delivered', attempts: 2, last_error: null },
    );
  });

  test('applied then no answer (timeout): the retry carries the same key, one effect', async () => {
    const setup = await setUp(
      (_request, index) => (index === 0 ? { status: 200, apply: true, hang: true } : { status: 200 }),
      { requestTimeoutMs: 1_500 },
    );
    const { eventId, view } = await settle(setup);

    const key = `${eventId}:carrier:release_hold`;
    assert.deepEqual(
      setup.carrier.requests.map((request) => request.key),
      [key, key],
    );
    assert.deepEqual(setup.carrier.effects, [key]);
    assert.equal(delivery(view, 'carrier').status, 'delivered');
    assert.equal(delivery(view, 'carrier').attempts, 2);
  });
});

describe('a worker killed mid-delivery', () => {
  test('SIGKILL while the carrier holds the request; another worker completes it with the same key, once', async () => {
    const setup = await setUp(
      (_request, index) => (index === 0 ? { status: 200, apply: true, hang: true } : { status: 200 }),
      { worker: false },
    );
    const { stack, carrier, erp } = setup;
    let child: ChildWorker | undefined = await startChildWorker(stack, {
      SETTLE_CARRIER_URL: carrier.url,
      SETTLE_ERP_URL: erp.url,
    });
    cleanups.push(() => child?.kill() ?? Promise.resolve());

    const event = paymentEvent({ shipmentId: setup.shipmentId, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await waitFor('the carrier to receive the release', async () => carrier.requests.length === 1);
    await child.kill();
    child = undefined;
    assert.equal(carrier.requests.length, 1);

    await stack.startWorker();
    const result: PaymentWorkflowResult = await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id))
      .result();
    assert.equal(result.outcome, 'applied');

    const key = `${event.id}:carrier:release_hold`;
    assert.deepEqual(
      carrier.requests.map((request) => request.key),
      [key, key],
    );
    assert.deepEqual(carrier.effects, [key]);
    const view = (await inspectEvent(stack.pool, stack.client, event.id))!;
    assert.deepEqual(
      view.deliveries.map((row) => [row.target, row.status, row.attempts]),
      [
        ['carrier', 'delivered', 2],
        ['erp', 'delivered', 1],
      ],
    );
    assert.equal(view.shipment?.hold_status, 'released');
    assert.equal(erp.requests.length, 1);
  });
});

describe('an unconfigured target', () => {
  test('is not sent and is parked as not_configured with a note; the rest of the flow completes', async () => {
    const carrier = await startReceiver();
    cleanups.push(() => carrier.close());
    const stack = await startTestStack({ config: { carrierUrl: carrier.url } });
    cleanups.push(() => stack.close());
    const shipmentId = uniqueId('SHP');
    await addShipments(stack.pool, [shipmentId]);
    const { result, view } = await settle({ stack, carrier, erp: carrier, shipmentId });

    assert.equal(result.outcome, 'applied');
    assert.equal(delivery(view, 'carrier').status, 'delivered');
    const erp = delivery(view, 'erp');
    assert.deepEqual(
      { status: erp.status, attempts: erp.attempts, last_error: erp.last_error },
      { status: 'not_configured', attempts: 0, last_error: 'not sent: SETTLE_ERP_URL is not configured' },
    );
  });
});
