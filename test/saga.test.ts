import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../src/activities';
import type { PaymentCompensationResult } from '../src/domain/workflow-contracts';
import { listOutboxForEvent } from '../src/db/outbox';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { inspectEvent, type EventInspection } from '../src/app/inspect';
import { replayEvent } from '../src/app/replay';
import type { PaymentWorkflowResult } from '../src/workflows';
import {
  paymentEvent,
  postWebhook,
  uniqueId,
  type TestStack,
  startStackWithReceivers,
} from '../testkit/harness';
import { useCleanups } from '../testkit/hooks';
import { type Behaviour, type Receiver } from '../testkit/receiver';

const cleanups = useCleanups();

type Setup = { stack: TestStack; carrier: Receiver; erp: Receiver };

async function setUp(carrierBehaviour: Behaviour, erpBehaviour: Behaviour): Promise<Setup> {
  const { stack, carrier, erp, close } = await startStackWithReceivers({
    carrier: carrierBehaviour,
    erp: erpBehaviour,
  });
  cleanups.push(close);
  return { stack, carrier, erp };
}

async function settleEvent(stack: TestStack) {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.settled', amount: 12500 });
  assert.equal((await postWebhook(stack, event)).status, 202);
  const result: PaymentWorkflowResult = await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();
  return { event, result };
}

const inspect = async (stack: TestStack, eventId: string): Promise<EventInspection> =>
  (await inspectEvent(stack.pool, stack.client, eventId))!;

describe('a permanent refusal after the carrier step succeeded', () => {
  test('ERP 4xx: the release is re-held once, a reversal is appended, the event needs review; compensating again changes nothing', async () => {
    const { stack, carrier, erp } = await setUp(
      () => ({ status: 200 }),
      () => ({ status: 422 }),
    );
    const { event, result } = await settleEvent(stack);

    assert.equal(result.outcome, 'needs_review');
    assert.equal(result.compensated, true);
    // The run's result shows each delivery as it ended, not as reconcile found it.
    const finalStates = [
      ['carrier', 'compensated'],
      ['erp', 'failed'],
    ];
    assert.deepEqual(
      result.deliveries.map(({ target, status }) => [target, status]),
      finalStates,
    );
    assert.deepEqual(
      result.outbox.map(({ target, status }) => [target, status]),
      finalStates,
    );
    // The release, then its compensation under its own key; the ERP refused once and was not retried.
    assert.deepEqual(
      carrier.requests.map((request) => [request.key, request.json.action]),
      [
        [`${event.id}:carrier:release_hold`, 'release_hold'],
        [`${event.id}:carrier:rehold`, 'hold'],
      ],
    );
    assert.equal(erp.requests.length, 1);

    const view = await inspect(stack, event.id);
    assert.equal(view.outcome, 'needs_review');
    assert.equal(view.shipment?.hold_status, 'held');
    assert.deepEqual(
      view.ledger.map(({ kind, amount, event_id }) => ({ kind, amount, event_id })),
      [
        { kind: 'capture', amount: 12500, event_id: event.id },
        { kind: 'reversal', amount: 12500, event_id: event.id },
      ],
    );
    assert.deepEqual(
      view.deliveries.map(({ target, status, attempts }) => ({ target, status, attempts })),
      [
        { target: 'carrier', status: 'compensated', attempts: 1 },
        { target: 'erp', status: 'failed', attempts: 1 },
      ],
    );
    assert.match(view.deliveries[1]!.last_error ?? '', /^HTTP 422/);

    // Each compensation run twice more, directly: nothing is sent, nothing appended.
    const activities = createActivities({
      pool: stack.pool,
      config: { carrierUrl: carrier.url, erpUrl: erp.url },
    });
    const [carrierRow] = await listOutboxForEvent(stack.pool, event.id);
    // As steps of the event's own run: an activity acts only for the run its workflow ID names.
    const mock = new MockActivityEnvironment({
      workflowExecution: { workflowId: paymentWorkflowId(event.id), runId: 'again' },
    });
    for (let i = 0; i < 2; i += 1) {
      assert.deepEqual(await mock.run(activities.reholdShipment, { outboxId: carrierRow!.outboxId }), {
        status: 'already_compensated',
      });
      const again: PaymentCompensationResult = await mock.run(activities.compensatePaymentEffects, {
        eventId: event.id,
        reason: 'again',
      });
      assert.deepEqual(
        { reversals: again.reversals, abandoned: again.abandoned },
        { reversals: 0, abandoned: 0 },
      );
    }
    // And the whole event pushed through again: the claim makes it a no-op.
    const replayed = await replayEvent(
      { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue },
      event.id,
    );
    assert.equal(replayed.status === 'replayed' && replayed.after, 'needs_review');

    const after = await inspect(stack, event.id);
    assert.deepEqual(after.ledger, view.ledger);
    assert.deepEqual(after.deliveries, view.deliveries);
    assert.equal(after.shipment?.hold_status, 'held');
    assert.equal(carrier.requests.length, 2);
    assert.equal(erp.requests.length, 1);
  });
});

describe('a permanent refusal of the first step', () => {
  test('carrier 4xx: the ERP entry is never sent, the capture is reversed, the event needs review', async () => {
    const { stack, carrier, erp } = await setUp(
      (request) => (request.json.action === 'release_hold' ? { status: 409 } : { status: 200 }),
      () => ({ status: 200 }),
    );
    const { event, result } = await settleEvent(stack);

    assert.equal(result.outcome, 'needs_review');
    assert.equal(erp.requests.length, 0);
    // The refused release was attempted, so its compensation re-holds (a no-op for a held shipment).
    assert.deepEqual(
      carrier.requests.map((request) => request.json.action),
      ['release_hold', 'hold'],
    );
    const view = await inspect(stack, event.id);
    assert.deepEqual(
      view.ledger.map((entry) => entry.kind),
      ['capture', 'reversal'],
    );
    assert.deepEqual(
      view.deliveries.map(({ target, status }) => ({ target, status })),
      [
        { target: 'carrier', status: 'compensated' },
        { target: 'erp', status: 'failed' },
      ],
    );
    assert.match(view.deliveries[1]!.last_error ?? '', /^not sent: the carrier refused release_hold/);
  });
});
