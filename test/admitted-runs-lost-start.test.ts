/**
 * The one way settle's own door leaves a run without its events row: a start Temporal made durable
 * while the gateway's deadline passed (its answer lost), so the admission rolled back. That run's
 * reconcile waits for the admission's lock, finds no row and is refused without effect; the provider's
 * retry, answered 503 the first time, is admitted and starts the event anew, and it applies once.
 * The gateway reaches Temporal through a real local TCP proxy that can drop Temporal's answers; the
 * worker talks to Temporal directly.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { openExceptions } from '../src/app/exceptions';
import { addShipments, findShipment } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { createWorker } from '../src/worker-runtime/create-worker';
import type { PaymentWorkflowResult } from '../src/workflows/payment';
import {
  countRows,
  paymentEvent,
  postWebhook,
  startTestStack,
  TEMPORAL_ADDRESS,
  uniqueId,
  type TestStack,
} from '../testkit/harness';
import { startFaultProxy, type FaultProxy } from '../testkit/fault-proxy';

let proxy: FaultProxy;
let stack: TestStack;
let worker: Awaited<ReturnType<typeof createWorker>>;
let running: Promise<void>;

before(async () => {
  proxy = await startFaultProxy(TEMPORAL_ADDRESS);
  stack = await startTestStack({ temporalAddress: proxy.address, worker: false });
  worker = await createWorker({
    config: { ...stack.config, temporalAddress: TEMPORAL_ADDRESS },
    pool: stack.pool,
  });
  running = worker.worker.run();
});

after(async () => {
  worker.worker.shutdown();
  await running;
  await worker.connection.close();
  await stack.close();
  await proxy.close();
});

test('a run whose admission rolled back is refused, and the provider’s retry applies the event once', async () => {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  // Warm: the gateway's connection through the proxy works.
  assert.equal((await postWebhook(stack, paymentEvent({ shipmentId: uniqueId('SHP') }))).status, 202);

  const event = paymentEvent({ shipmentId, type: 'payment.settled' });
  proxy.state.dropAnswers = true;
  const first = await postWebhook(stack, event);
  proxy.state.dropAnswers = false;
  proxy.cutConnections();
  assert.equal(first.status, 503, JSON.stringify(first.body));

  // Temporal did start it; without the row it applied nothing.
  const lost = stack.client.workflow.getHandle(paymentWorkflowId(event.id));
  const failure = await lost.result().then(
    () => assert.fail('the run without an events row completed'),
    (error: unknown) => error,
  );
  assert.ok(failure instanceof WorkflowFailedError, String(failure));
  assert.equal((failure.cause as { cause?: { type?: string } }).cause?.type, 'unadmitted_run');
  assert.equal(await countRows(stack.pool, 'claims', event.id), 0);
  assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'pending');
  const listed = async () =>
    (
      await openExceptions(stack, {
        kinds: ['unadmitted_run'],
        eventIds: [event.id],
        unreconciledAfterMs: 15 * 60_000,
        stuckAfterMs: 5 * 60_000,
        limit: null,
      })
    ).exceptions;
  assert.equal((await listed()).length, 1);
  const refusedRunId = (await lost.describe()).runId;

  // The provider retries: admitted now, a new run in place of the refused one.
  const retry = await postWebhook(stack, event);
  assert.equal(retry.status, 202, JSON.stringify(retry.body));
  assert.notEqual(retry.body.run_id, refusedRunId);
  const applied = (await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id), String(retry.body.run_id))
    .result()) as PaymentWorkflowResult;
  assert.equal(applied.outcome, 'applied');
  assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'settled');
  // Explained by the admission since: no longer an open exception.
  assert.deepEqual(await listed(), []);
});
