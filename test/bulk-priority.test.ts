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
import { test } from 'node:test';
import { BULK_PRIORITY_KEY } from '../src/client';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import { finished, importEvents, spawnSettle, stackEnv } from './support/settle-cli';

// No worker until the first test starts one: its import must wait for it.
const stack = useTestStack({ worker: false });
/** Whether the first test got as far as starting the worker (the second needs one, whatever the first did). */
let workerStarted = false;

async function startedAs(eventId: string): Promise<{ priority?: number; taskQueue: string }> {
  const description = await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
  return { priority: description.priority?.priorityKey, taskQueue: description.taskQueue };
}

test('an import waits while its runs queue for the workers, and finishes once they catch up', async () => {
  // No worker has polled yet (a stopped worker's last long polls can still take tasks).
  const events = Array.from({ length: 12 }, () => paymentEvent({ shipmentId: uniqueId('SHP') }));
  await addShipments(
    stack.pool,
    events.map((event) => event.data.shipment_id),
  );
  const dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
  const file = join(dir, 'report.jsonl');
  writeFileSync(file, events.map((event) => JSON.stringify(event)).join('\n'));
  const ids = events.map((event) => event.id);
  const admitted = async () => {
    const { rows } = await stack.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1)',
      [ids],
    );
    return rows[0]!.n;
  };
  try {
    const importing = finished(
      spawnSettle(['import', file, '--json', '--max-backlog', '4', '--concurrency', '1'], stackEnv(stack)),
    );
    let exited = false;
    void importing.then(() => (exited = true));
    // With no worker polling, four runs wait on the bulk queue and the import holds the rest back.
    await waitFor('four imported runs queued', admitted, { until: (n) => n >= 4, timeoutMs: 300_000 });
    // Proving an absence takes time: several refreshes of the backlog (every 250 ms) with no progress.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    if (exited) {
      const run = await importing;
      assert.fail(`the import ran to the end with no worker to drain its runs: ${run.stdout} ${run.stderr}`);
    }
    assert.ok((await admitted()) <= 5, `${await admitted()} runs admitted past a backlog of 4`);

    await stack.startWorker();
    workerStarted = true;
    const run = await importing;
    assert.equal(run.code, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { counts: { accepted: number } }).counts.accepted, 12);
    for (const event of events) {
      const result = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
      assert.equal(result.outcome, 'applied', event.id);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an imported event’s run waits behind live traffic; a webhook’s does not', async () => {
  // Without a worker (the test above failed before it started one) the runs below would wait forever.
  if (!workerStarted) {
    await stack.startWorker();
    workerStarted = true;
  }
  const live = paymentEvent({ shipmentId: uniqueId('SHP') });
  const imported = paymentEvent({ shipmentId: uniqueId('SHP') });
  await addShipments(stack.pool, [live.data.shipment_id, imported.data.shipment_id]);
  assert.equal((await postWebhook(stack, live)).status, 202);

  const run = await importEvents([imported], stackEnv(stack));
  assert.equal(run.code, 0, run.stderr);

  const bulk = await startedAs(imported.id);
  assert.equal(bulk.priority, BULK_PRIORITY_KEY);
  assert.equal(bulk.taskQueue, `${stack.config.taskQueue}-bulk`);
  const webhook = await startedAs(live.id);
  // Unset is Temporal's default (3): ahead of bulk work.
  assert.ok((webhook.priority ?? 0) < BULK_PRIORITY_KEY);
  assert.equal(webhook.taskQueue, stack.config.taskQueue);

  // One settle worker serves both queues: both events are applied.
  for (const event of [live, imported]) {
    const result = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    assert.equal(result.outcome, 'applied', event.id);
  }
});
