import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startChildWorker, type ChildWorker } from './support/child-worker';
import { runMarkKey } from '../src/app/run-marks';
import { startReminderWorkflow } from '../src/client';
import { insertReminder } from '../src/db/reminders';
import { reminderWorkflowId } from '../src/domain/ids';
import { newSecret, startTestStack, uniqueId, waitFor, type TestStack } from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import { assertSignedDelivery, remindersApi } from './support/reminders';

/** Longer than the heartbeat timeout (10 s) plus the first retry interval, so the retry meets a live lease. */
const LEASE_MS = 25_000;

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

type Attempt = {
  attempt: number;
  started_at: string;
  lease_expires_at: string;
  finished_at: string | null;
  status_code: number | null;
};

test('a reminder whose worker vanished while processing is delivered by another attempt after the lease expires, same delivery ID, one effect', async () => {
  const reminderSecret = newSecret();
  const receiver: Receiver = await startReceiver((_request, index) =>
    index === 0 ? { status: 200, apply: true, hang: true } : { status: 200 },
  );
  closers.push(() => receiver.close());
  const stack: TestStack = await startTestStack({
    worker: false,
    config: { reminderSecret: [reminderSecret] },
    tuning: { reminderLeaseMs: LEASE_MS, requestTimeoutMs: 5_000 },
  });
  closers.push(() => stack.close());
  let child: ChildWorker | undefined = await startChildWorker(
    stack,
    { SETTLE_REMINDER_SECRET: reminderSecret, SETTLE_ALLOW_PRIVATE_TARGETS: 'true' },
    { reminderLeaseMs: LEASE_MS, requestTimeoutMs: LEASE_MS - 1_000 },
  );
  closers.push(() => child?.kill() ?? Promise.resolve());

  const key = uniqueId('renewal');
  const api = (method: 'POST' | 'GET', body?: unknown) =>
    remindersApi(
      stack.gatewayUrl,
      stack.apiToken,
      method,
      method === 'POST' ? '/reminders' : `/reminders/${key}`,
      {
        key,
        body,
      },
    );
  const scheduled = await api('POST', {
    contract_id: 'CT-88',
    due_at: new Date(Date.now() + 1_000).toISOString(),
    webhook_url: `${receiver.url}/renewal`,
    payload: { any: 'json' },
  });
  assert.equal(scheduled.status, 202);

  await waitFor('the first attempt to reach the receiver', async () => receiver.requests.length === 1);
  const during = await api('GET');
  assert.equal(during.body.status, 'processing');
  assert.ok(during.body.lease_expires_at, 'processing carries a lease');
  await child.kill();
  child = undefined;

  await stack.startWorker();
  const done = await waitFor(
    'another attempt to deliver it',
    async () => {
      const view = await api('GET');
      return view.body.status === 'succeeded' && view;
    },
    300_000,
  );

  assert.equal(receiver.requests.length, 2);
  for (const request of receiver.requests) assertSignedDelivery(request, key, reminderSecret);
  assert.deepEqual(receiver.effects, [key]);

  const [first, second] = done.body.attempts as Attempt[];
  assert.equal(first!.finished_at, null, 'the vanished attempt never finished');
  assert.equal(second!.status_code, 200);
  assert.ok(
    Date.parse(second!.started_at) >= Date.parse(first!.lease_expires_at),
    `the second attempt started at ${second!.started_at}, inside the first one's lease (${first!.lease_expires_at})`,
  );
  assert.equal(done.body.attempt_count, 2);
});

test('a reminder due at once, whose run asks before its admission commits, waits for the commit and is delivered once', async () => {
  const reminderSecret = newSecret();
  const receiver: Receiver = await startReceiver();
  closers.push(() => receiver.close());
  const stack: TestStack = await startTestStack({
    config: { reminderSecret: [reminderSecret], allowPrivateTargets: true },
  });
  closers.push(() => stack.close());
  const deliveryId = uniqueId('renewal');
  const dueAt = new Date();

  // The admission as the gateway runs it, held open after Temporal accepted the run: the row is
  // not yet visible to the run's delivery, which must wait for it rather than give up.
  const admission = await stack.pool.connect();
  try {
    await admission.query('BEGIN');
    await insertReminder(admission, {
      deliveryId,
      contractId: 'CT-commit',
      dueAt,
      webhookUrl: `${receiver.url}/renewal`,
      payload: null,
      requestSha256: 'a'.repeat(64),
      workflowId: reminderWorkflowId(deliveryId),
    });
    await startReminderWorkflow(
      stack.client,
      stack.taskQueue,
      { deliveryId, dueAt },
      { markKey: await runMarkKey(stack.pool), runs: admission },
    );
    await waitFor(
      'the delivery to wait on the admission',
      async () => {
        const { rows } = await stack.pool.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
        );
        return rows[0]!.waiting > 0;
      },
      120_000,
    );
    await admission.query('COMMIT');
  } finally {
    admission.release();
  }

  await waitFor('the reminder to reach the receiver', async () => receiver.requests.length === 1, 120_000);
  const view = await waitFor(
    'the reminder to succeed',
    async () => {
      const result = await remindersApi(stack.gatewayUrl, stack.apiToken, 'GET', `/reminders/${deliveryId}`);
      return result.body.status === 'succeeded' && result;
    },
    120_000,
  );
  assert.equal((view.body.attempts as unknown[]).length, 1);
  assert.equal(receiver.requests.length, 1);
});
