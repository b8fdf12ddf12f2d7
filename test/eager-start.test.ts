/**
 * Eager workflow start: where the gateway and a worker share one process (`settle start`, `settle
 * serve`), the gateway's client sits on the worker's own connection and Temporal answers a payment's
 * start with its first workflow task for that worker. The suite's Temporal dev server grants it; a
 * client on a connection of its own is never granted it, and the run completes the same either way.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertAdmittedEvent } from '../src/db/events';
import { runMarkKey } from '../src/app/run-marks';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { payloadSha256 } from '../src/lib/hash';
import { clientOnWorkerConnection, startPaymentWorkflow } from '../src/client';
import { createWorker } from '../src/worker-runtime/create-worker';
import type { PaymentWorkflowResult } from '../src/workflows/payment';
import { paymentEvent, startTestStack, uniqueId, type TestStack } from '../testkit/harness';

let stack: TestStack;
let worker: Awaited<ReturnType<typeof createWorker>>;
let running: Promise<void>;

before(async () => {
  stack = await startTestStack({ worker: false });
  worker = await createWorker({ config: stack.config, pool: stack.pool });
  running = worker.worker.run();
});
after(async () => {
  worker.worker.shutdown();
  await running;
  await worker.connection.close();
  await stack.close();
});

async function startAndFinish(client: typeof stack.client) {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.authorized' });
  // Stored as settle's door stores it (the reconcile applies only what it admitted).
  await insertAdmittedEvent(stack.pool, {
    eventId: event.id,
    type: event.type,
    payload: event,
    payloadSha256: payloadSha256(event),
    workflowId: paymentWorkflowId(event.id),
    source: 'webhook',
  });
  const start = await startPaymentWorkflow(client, stack.taskQueue, event, {
    markKey: await runMarkKey(stack.pool),
    runs: stack.pool,
  });
  assert.equal(start.started, true);
  const result = (await client.workflow.getHandle(start.workflowId).result()) as PaymentWorkflowResult;
  return { start, result, shipmentId };
}

test('a client on the worker’s connection is granted eager start, and the run completes', async () => {
  const client = clientOnWorkerConnection(worker.connection, stack.config);
  const { start, result } = await startAndFinish(client);
  assert.equal(start.started && start.eagerlyStarted, true, 'the dev server did not grant eager start');
  assert.equal(result.outcome, 'applied');
});

test('a client on a connection of its own starts the usual way, with the same outcome', async () => {
  const { start, result } = await startAndFinish(stack.client);
  assert.equal(start.started && start.eagerlyStarted, false);
  assert.equal(result.outcome, 'applied');
});
