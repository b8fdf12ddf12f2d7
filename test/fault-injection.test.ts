import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Context } from '@temporalio/activity';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, paymentEvent, postWebhook, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';

/** Event IDs whose first reconcile attempt loses its completion after COMMIT. */
const loseFirstCompletion = new Set<string>();
/** Per event, each reconcile attempt that committed or found its claim: `local 1`, `activity 1`, … */
const attemptsSeen = new Map<string, string[]>();

const stack = useTestStack({
  afterCommit: (eventId, attempt) => {
    const path = Context.current().info.isLocal ? 'local' : 'activity';
    attemptsSeen.set(eventId, [...(attemptsSeen.get(eventId) ?? []), `${path} ${attempt}`]);
    if (loseFirstCompletion.has(eventId) && attemptsSeen.get(eventId)!.length === 1) {
      throw new Error('injected fault: the worker lost the activity completion after COMMIT');
    }
  },
});

test('an activity retried after its transaction committed returns the same outcome and commits one effect', async () => {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.captured' });
  loseFirstCompletion.add(event.id);

  assert.equal((await postWebhook(stack, event)).status, 202);
  const result: PaymentWorkflowResult = await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();

  // The fast local attempt committed and then failed; the durable activity's first attempt found the claim.
  assert.deepEqual(attemptsSeen.get(event.id), ['local 1', 'activity 1']);
  assert.equal(result.outcome, 'applied');
  assert.equal(result.claimExisted, true);
  assert.equal(result.paymentStatus, 'captured');
  assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
  assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  assert.equal(await countRows(stack.pool, 'outbox', event.id), 2);
});

test('without the fault the same path commits on the first attempt', async () => {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.captured' });
  assert.equal((await postWebhook(stack, event)).status, 202);
  const result: PaymentWorkflowResult = await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();
  assert.deepEqual(attemptsSeen.get(event.id), ['local 1']);
  assert.equal(result.claimExisted, false);
  assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
});

test('a refund after a capture appends its own ledger entry; a second refund event appends another', async () => {
  const shipmentId = uniqueId('SHP');
  const paymentId = uniqueId('pi');
  await addShipments(stack.pool, [shipmentId]);
  const run = async (type: string, amount: number) => {
    const event = paymentEvent({ shipmentId, paymentId, type, amount });
    assert.equal((await postWebhook(stack, event)).status, 202);
    return (await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id))
      .result()) as PaymentWorkflowResult;
  };
  assert.equal((await run('payment.settled', 10000)).outcome, 'applied');
  assert.equal((await run('payment.refunded', 2500)).outcome, 'applied');
  assert.equal((await run('payment.refunded', 1500)).outcome, 'applied');
  assert.equal((await run('payment.captured', 10000)).outcome, 'stale');
  const { rows } = await stack.pool.query<{ kind: string; amount: number }>(
    'SELECT kind, amount FROM ledger_entries WHERE shipment_id = $1 ORDER BY entry_id',
    [shipmentId],
  );
  assert.deepEqual(rows, [
    { kind: 'capture', amount: 10000 },
    { kind: 'refund', amount: 2500 },
    { kind: 'refund', amount: 1500 },
  ]);
});

test('the ledger is append-only: UPDATE and DELETE are refused by the database', async () => {
  await assert.rejects(stack.pool.query('UPDATE ledger_entries SET amount = 0'), /append-only/);
  await assert.rejects(stack.pool.query('DELETE FROM ledger_entries'), /append-only/);
});
