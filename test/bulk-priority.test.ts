/**
 * Live traffic ahead of bulk work: a payment run started by `settle import` runs on the bulk task
 * queue (`<queue>-bulk`, which every worker polls with a few slots of its own) at Temporal's bulk
 * priority (key 5, behind the default 3); a webhook's run keeps the configured queue and the
 * default. What an operator sees in the run's details; then a worker completes both.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { BULK_PRIORITY_KEY } from '../src/temporal/client';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { paymentEvent, postWebhook, startTestStack, uniqueId, type TestStack } from './support/harness';
import { runSettle, stackEnv } from './support/settle-cli';

let stack: TestStack;

before(async () => {
  // No worker: the runs stay open, their start options are what is checked.
  stack = await startTestStack({ worker: false });
});
after(() => stack.close());

async function startedAs(eventId: string): Promise<{ priority?: number; taskQueue: string }> {
  const description = await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
  return { priority: description.priority?.priorityKey, taskQueue: description.taskQueue };
}

test('an imported event’s run waits behind live traffic; a webhook’s does not', async () => {
  const live = paymentEvent({ shipmentId: uniqueId('SHP') });
  assert.equal((await postWebhook(stack, live)).status, 202);

  const imported = paymentEvent({ shipmentId: uniqueId('SHP') });
  const dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
  try {
    const file = join(dir, 'report.jsonl');
    writeFileSync(file, `${JSON.stringify(imported)}\n`);
    const run = await runSettle(['import', file, '--json'], stackEnv(stack));
    assert.equal(run.code, 0, run.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const bulk = await startedAs(imported.id);
  assert.equal(bulk.priority, BULK_PRIORITY_KEY);
  assert.equal(bulk.taskQueue, `${stack.config.taskQueue}-bulk`);
  const webhook = await startedAs(live.id);
  // Unset is Temporal's default (3): ahead of bulk work.
  assert.ok((webhook.priority ?? 0) < BULK_PRIORITY_KEY);
  assert.equal(webhook.taskQueue, stack.config.taskQueue);

  // One settle worker serves both queues: both events are applied.
  await addShipments(stack.pool, [live.data.shipment_id, imported.data.shipment_id]);
  await stack.startWorker();
  for (const event of [live, imported]) {
    const result = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    assert.equal(result.outcome, 'applied', event.id);
  }
});
