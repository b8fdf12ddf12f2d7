import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { inspectEvent, type EventInspection } from '../src/app/inspect';
import { replayEvent } from '../src/app/replay';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';

const stack = useTestStack();

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

async function workflowResult(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

async function inspect(eventId: string): Promise<EventInspection> {
  const response = await fetch(`${stack.gatewayUrl}/events/${eventId}`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  assert.equal(response.status, 200);
  return (await response.json()) as EventInspection;
}

describe('a signed payment event', () => {
  test('is accepted with 202, reconciled once, and inspectable', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });

    const response = await postWebhook(stack, event);
    assert.equal(response.status, 202);
    assert.equal(response.body.status, 'accepted');
    assert.equal(response.body.event_id, event.id);
    assert.equal(response.body.workflow_id, `payment:${event.id}`);
    assert.match(String(response.body.run_id), /^[0-9a-f-]{36}$/);

    const result = await workflowResult(event.id);
    assert.equal(result.outcome, 'applied');

    const view = await inspect(event.id);
    assert.equal(view.outcome, 'applied');
    assert.deepEqual(view.workflow, { status: 'COMPLETED', run_id: response.body.run_id });
    assert.deepEqual(view.shipment, {
      shipment_id: shipmentId,
      payment_status: 'settled',
      hold_status: 'held',
    });
    assert.equal(view.ledger.length, 1);
    assert.deepEqual(
      view.ledger.map(({ kind, amount, currency, event_id }) => ({ kind, amount, currency, event_id })),
      [{ kind: 'capture', amount: 12500, currency: 'EUR', event_id: event.id }],
    );
    assert.deepEqual(
      view.deliveries.map((d) => [d.target, d.idempotency_key]),
      [
        ['carrier', `${event.id}:carrier:release_hold`],
        ['erp', `${event.id}:erp:post_ledger_entry`],
      ],
    );
    assert.match(view.payload_sha256, /^[0-9a-f]{64}$/);
  });

  test('delivered again while running and after completion is a 200 duplicate with no second effect', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId });
    // Stop the worker so the first run is still open when the duplicate arrives.
    await stack.stopWorker();
    try {
      assert.equal((await postWebhook(stack, event)).status, 202);
      const whileRunning = await postWebhook(stack, event);
      assert.equal(whileRunning.status, 200);
      assert.deepEqual(whileRunning.body, {
        status: 'duplicate',
        event_id: event.id,
        workflow_id: `payment:${event.id}`,
      });
    } finally {
      await stack.startWorker();
    }
    await workflowResult(event.id);

    // The provider may reorder fields and spacing: the canonical hash still matches.
    const reordered = JSON.stringify(
      { data: event.data, created_at: event.created_at, type: event.type, id: event.id },
      null,
      2,
    );
    const afterCompletion = await postWebhook(stack, undefined, { rawBody: reordered });
    assert.equal(afterCompletion.status, 200);
    assert.equal(afterCompletion.body.status, 'duplicate');

    assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(await countRows(stack.pool, 'outbox', event.id), 2);
  });

  test('twenty concurrent deliveries start one workflow and commit one effect, every response 2xx', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId });
    const responses = await Promise.all(Array.from({ length: 20 }, () => postWebhook(stack, event)));
    const statuses = responses.map((response) => response.status);
    assert.ok(
      statuses.every((status) => status === 200 || status === 202),
      `statuses: ${statuses.join(',')}`,
    );
    assert.equal(statuses.filter((status) => status === 202).length, 1);
    assert.equal(responses.filter((r) => r.body.status === 'duplicate').length, 19);

    await workflowResult(event.id);
    // Visibility is eventually consistent: wait until the run shows, then count every run of the ID.
    const runs = await waitFor('the run to be visible', async () => {
      const { executions } = await stack.client.workflowService.listWorkflowExecutions({
        namespace: 'default',
        query: `WorkflowId = 'payment:${event.id}' AND ExecutionStatus = 'Completed'`,
      });
      return executions.length > 0 && executions;
    });
    assert.equal(runs.length, 1);
    assert.equal(await countRows(stack.pool, 'events', event.id), 1);
    assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });

  test('after Temporal forgot the workflow ID, the claim refuses a second effect', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId });
    const accepted = await postWebhook(stack, event);
    assert.equal(accepted.status, 202);
    const first = { runId: accepted.body.run_id, ...(await workflowResult(event.id)) };
    assert.equal(first.claimExisted, false);

    // Once retention drops the closed run, Temporal accepts the ID again. ALLOW_DUPLICATE is the same
    // situation without waiting a day: a new run starts and only the claim stands in the way.
    const handle = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: paymentWorkflowId(event.id),
      args: [{ event }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
    assert.notEqual(handle.firstExecutionRunId, first.runId);
    const second = (await handle.result()) as PaymentWorkflowResult;
    assert.equal(second.outcome, 'applied');
    assert.equal(second.claimExisted, true);
    assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(await countRows(stack.pool, 'outbox', event.id), 2);
  });

  test('the same ID with another payload is refused with 409 and the original effect stands', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, amount: 12500 });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await workflowResult(event.id);

    const altered = { ...event, data: { ...event.data, amount: 99999 } };
    const response = await postWebhook(stack, altered);
    assert.equal(response.status, 409);
    assert.equal(response.body.status, 'rejected');
    assert.equal(response.body.error, 'idempotency_key_reused');

    const view = await inspect(event.id);
    assert.deepEqual(
      view.ledger.map((entry) => entry.amount),
      [12500],
    );
    assert.equal(view.outcome, 'applied');
  });

  test('the claim refuses a reused ID with another payload even when Temporal would run it', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await workflowResult(event.id);

    const altered = { ...event, data: { ...event.data, amount: 1 } };
    const handle = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: `${paymentWorkflowId(event.id)}:conflict-probe`,
      args: [{ event: altered }],
    });
    await assert.rejects(handle.result(), (error: Error & { cause?: { cause?: { type?: string } } }) => {
      assert.equal(error.name, 'WorkflowFailedError');
      assert.equal(error.cause?.cause?.type, 'idempotency_key_reused');
      return true;
    });
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });
});

describe('ordering and parking', () => {
  test('an older authorized arriving after settled is stale and the status stays settled', async () => {
    const shipmentId = await newShipment();
    const settled = paymentEvent({ shipmentId, type: 'payment.settled', createdAt: '2026-08-10T02:14:00Z' });
    const authorized = paymentEvent({
      shipmentId,
      type: 'payment.authorized',
      createdAt: '2026-08-10T01:00:00Z',
    });

    assert.equal((await postWebhook(stack, settled)).status, 202);
    assert.equal((await workflowResult(settled.id)).outcome, 'applied');
    assert.equal((await postWebhook(stack, authorized)).status, 202);
    assert.equal((await workflowResult(authorized.id)).outcome, 'stale');

    const view = await inspect(authorized.id);
    assert.equal(view.outcome, 'stale');
    assert.equal(view.shipment?.payment_status, 'settled');
    assert.equal(await countRows(stack.pool, 'ledger_entries', authorized.id), 0);
    assert.equal(await countRows(stack.pool, 'outbox', authorized.id), 0);
  });

  test('an unknown shipment is parked as unmatched; replay applies it once the shipment exists, then is a no-op', async () => {
    const shipmentId = uniqueId('SHP');
    const event = paymentEvent({ shipmentId, type: 'payment.captured' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    assert.equal((await workflowResult(event.id)).outcome, 'unmatched');
    assert.equal((await inspectEvent(stack.pool, stack.client, event.id))?.outcome, 'unmatched');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 0);

    await addShipments(stack.pool, [shipmentId]);
    const deps = { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue };
    const first = await replayEvent(deps, event.id);
    assert.deepEqual(
      first.status === 'replayed' && { before: first.before, after: first.after, changed: first.changed },
      { before: 'unmatched', after: 'applied', changed: true },
    );
    const second = await replayEvent(deps, event.id);
    assert.deepEqual(
      second.status === 'replayed' && { before: second.before, after: second.after, changed: second.changed },
      { before: 'applied', after: 'applied', changed: false },
    );

    const view = await inspectEvent(stack.pool, stack.client, event.id);
    assert.equal(view?.shipment?.payment_status, 'captured');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(await countRows(stack.pool, 'outbox', event.id), 2);
    assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
  });

  test('replay of an event settle never received changes nothing', async () => {
    const result = await replayEvent(
      { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue },
      uniqueId(),
    );
    assert.equal(result.status, 'not_found');
  });
});
