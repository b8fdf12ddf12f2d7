/**
 * Live traffic ahead of bulk work: a payment run started by `settle import` carries Temporal's bulk
 * priority (key 5, behind the default 3), so on a shared task queue its tasks wait behind webhooks';
 * a webhook's run keeps the default. What an operator sees in the run's details.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { BULK_PRIORITY_KEY } from '../src/temporal/client';
import { paymentWorkflowId } from '../src/domain/ids';
import { paymentEvent, postWebhook, startTestStack, type TestStack } from './support/harness';
import { runSettle, stackEnv } from './support/settle-cli';

let stack: TestStack;

before(async () => {
  // No worker: the runs stay open, their start options are what is checked.
  stack = await startTestStack({ worker: false });
});
after(() => stack.close());

async function priorityOf(eventId: string): Promise<number | undefined> {
  const description = await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
  return description.priority?.priorityKey;
}

test('an imported event’s run waits behind live traffic; a webhook’s does not', async () => {
  const live = paymentEvent();
  assert.equal((await postWebhook(stack, live)).status, 202);

  const imported = paymentEvent();
  const dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
  try {
    const file = join(dir, 'report.jsonl');
    writeFileSync(file, `${JSON.stringify(imported)}\n`);
    const run = await runSettle(['import', file, '--json'], stackEnv(stack));
    assert.equal(run.code, 0, run.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  assert.equal(await priorityOf(imported.id), BULK_PRIORITY_KEY);
  // Unset is Temporal's default (3): ahead of bulk work.
  assert.ok(((await priorityOf(live.id)) ?? 0) < BULK_PRIORITY_KEY);
});
