import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import { buildGateway } from '../src/gateway/server';
import { logger } from '../src/lib/logger';
import { createWorker, installTemporalRuntime } from '../src/worker-runtime/create-worker';
import type { ReminderWorkflowResult } from '../src/workflows';
import { createTestDatabase, newSecret, uniqueId } from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import { assertSignedDelivery, remindersApi, type ApiResult } from './support/reminders';

const DAY = 86_400_000;
const reminderSecret = newSecret();
const apiToken = randomBytes(24).toString('hex');

let env: TestWorkflowEnvironment;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let stopWorker: () => Promise<void>;
/** Allows loopback targets, as development and these tests need. */
let gatewayUrl: string;
/** The default: private and loopback targets refused. */
let strictGatewayUrl: string;
const closers: (() => Promise<void>)[] = [];

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

before(async () => {
  installTemporalRuntime();
  const path = process.env.SETTLE_TEMPORAL_TEST_SERVER;
  assert.ok(path, 'SETTLE_TEMPORAL_TEST_SERVER is not set: run the suite with `npm test`');
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path } },
  });
  database = await createTestDatabase();
  const taskQueue = `settle-test-reminders-${randomBytes(4).toString('hex')}`;
  const { worker, connection } = await createWorker({
    config: {
      temporalAddress: env.address,
      temporalNamespace: 'default',
      taskQueue,
      reminderSecret: [reminderSecret],
      allowPrivateTargets: true,
    },
    pool: database.pool,
    tuning: { requestTimeoutMs: 2_000, reminderLeaseMs: 10_000 },
  });
  const running = worker.run();
  stopWorker = async () => {
    worker.shutdown();
    await running;
    await connection.close();
  };
  const deps = {
    pool: database.pool,
    client: env.client,
    taskQueue,
    webhookSecrets: [newSecret()],
    apiToken,
    logger,
  };
  gatewayUrl = await listen(buildGateway({ ...deps, allowPrivateTargets: true }));
  strictGatewayUrl = await listen(buildGateway(deps));
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await stopWorker?.();
  await env?.teardown();
  await database?.drop();
});

async function newReceiver(behaviour?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const receiver = await startReceiver(behaviour);
  closers.push(() => receiver.close());
  return receiver;
}

const post = (key: string | undefined, body: unknown, url = gatewayUrl, token: string | null = apiToken) =>
  remindersApi(url, token, 'POST', '/reminders', { key, body });
const get = (key: string) => remindersApi(gatewayUrl, apiToken, 'GET', `/reminders/${key}`);
const cancel = (key: string) => remindersApi(gatewayUrl, apiToken, 'DELETE', `/reminders/${key}`);
const result = (key: string): Promise<ReminderWorkflowResult> =>
  env.client.workflow.getHandle(`reminder:${key}`).result();

async function reminderBody(receiver: Receiver, dueInMs: number) {
  return {
    contract_id: uniqueId('CT'),
    due_at: new Date((await env.currentTimeMs()) + dueInMs).toISOString(),
    webhook_url: `${receiver.url}/hooks/renewal`,
    payload: { plan: 'annual', seats: 12 },
  };
}

/**
 * When the run scheduled each delivery attempt, on the test server's clock (the one due_at is read
 * against): the history records it, so "not before due" needs no waiting.
 */
async function deliveriesScheduledAt(key: string): Promise<number[]> {
  const history = await env.client.workflow.getHandle(`reminder:${key}`).fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverReminder')
    .map(
      (event) => Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6),
    );
}

describe('POST /reminders', () => {
  test('refuses a missing token, a missing key and a bad body, naming the field', async () => {
    const receiver = await newReceiver();
    const body = await reminderBody(receiver, DAY);
    assert.equal((await post(uniqueId('rem'), body, gatewayUrl, null)).status, 401);

    const noKey = await post(undefined, body);
    assert.equal(noKey.status, 400);
    assert.equal(noKey.body.error, 'invalid_reminder');
    assert.deepEqual(issuePaths(noKey), ['headers.idempotency-key']);

    const bad = await post(uniqueId('rem'), { ...body, due_at: 'tomorrow', webhook_url: 'ftp://x' });
    assert.equal(bad.status, 400);
    assert.deepEqual(issuePaths(bad).sort(), ['due_at', 'webhook_url']);
  });

  test('a loopback target is refused by default, by literal address and by a name that resolves to one', async () => {
    const receiver = await newReceiver();
    const body = await reminderBody(receiver, DAY);
    const port = new URL(receiver.url).port;
    for (const webhookUrl of [
      `http://127.0.0.1:${port}/hook`,
      `http://localhost:${port}/hook`,
      'http://[::1]/hook',
    ]) {
      const key = uniqueId('rem');
      const refused = await post(key, { ...body, webhook_url: webhookUrl }, strictGatewayUrl);
      assert.equal(refused.status, 400, webhookUrl);
      assert.deepEqual(issuePaths(refused), ['webhook_url']);
      assert.equal((await get(key)).status, 404);
    }
  });
});

describe('a reminder', () => {
  test('due in 30 days is delivered at its due time and not before; a duplicate POST schedules nothing new', async () => {
    const receiver = await newReceiver();
    const key = uniqueId('renewal');
    const body = await reminderBody(receiver, 30 * DAY);

    const scheduled = await post(key, body);
    assert.equal(scheduled.status, 202);
    assert.deepEqual(scheduled.body, {
      status: 'scheduled',
      delivery_id: key,
      workflow_id: `reminder:${key}`,
      due_at: body.due_at,
    });
    const again = await post(key, body);
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'duplicate');
    const reused = await post(key, { ...body, payload: { plan: 'monthly' } });
    assert.equal(reused.status, 409);
    assert.equal(reused.body.error, 'idempotency_key_reused');

    await env.sleep(30 * DAY - 60_000);
    assert.equal((await get(key)).body.status, 'scheduled');

    await env.sleep(120_000);
    assert.deepEqual(await result(key), { state: 'succeeded', attempts: 1 });
    // Not before due: the one delivery was scheduled at or after due_at on the server's clock.
    const scheduledAt = await deliveriesScheduledAt(key);
    assert.equal(scheduledAt.length, 1);
    assert.ok(scheduledAt[0]! >= Date.parse(body.due_at), 'delivered before it was due');
    assert.equal(receiver.requests.length, 1);
    assertSignedDelivery(receiver.requests[0]!, key, reminderSecret);
    // Its signed body names who it is for: this webhook URL, so no other receiver takes it as its own.
    assert.equal(receiver.requests[0]!.json.audience, body.webhook_url);
    assert.equal(receiver.requests[0]!.json.contract_id, body.contract_id);
    assert.deepEqual(receiver.requests[0]!.json.payload, body.payload);

    const view = await get(key);
    assert.equal(view.body.status, 'succeeded');
    assert.equal(view.body.attempt_count, 1);
    assert.deepEqual(
      (view.body.attempts as { status_code: number }[]).map((attempt) => attempt.status_code),
      [200],
    );
    assert.equal((await post(key, body)).body.status, 'duplicate');
    const { rows } = await database.pool.query(
      'SELECT count(*)::int AS n FROM reminders WHERE delivery_id = $1',
      [key],
    );
    assert.equal(rows[0].n, 1);
  });

  test('cancelled before it is due is never delivered', async () => {
    const receiver = await newReceiver();
    const key = uniqueId('renewal');
    assert.equal((await post(key, await reminderBody(receiver, DAY))).status, 202);

    const cancelled = await cancel(key);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal((await cancel(key)).status, 200, 'cancelling twice is fine');
    // The run has ended without scheduling a delivery: nothing can deliver it any more.
    assert.deepEqual(await result(key), { state: 'cancelled', attempts: 0 });
    assert.deepEqual(await deliveriesScheduledAt(key), []);
    assert.equal(receiver.requests.length, 0);
    assert.equal((await get(key)).body.status, 'cancelled');
  });

  test('answered 410 Gone stops: failed after one attempt, never retried', async () => {
    const receiver = await newReceiver(() => ({ status: 410 }));
    const key = uniqueId('renewal');
    assert.equal((await post(key, await reminderBody(receiver, 3_600_000))).status, 202);

    // The run has ended after its one delivery (a 410 is not retried): nothing can send it again.
    assert.deepEqual(await result(key), { state: 'failed', attempts: 1 });
    assert.equal((await deliveriesScheduledAt(key)).length, 1);
    assert.equal(receiver.requests.length, 1);
    assertSignedDelivery(receiver.requests[0]!, key, reminderSecret);
    const view = await get(key);
    assert.equal(view.body.status, 'failed');
    assert.match(String(view.body.last_error), /^HTTP 410/);
    assert.equal((await cancel(key)).status, 409);
  });

  test('answered 500 every time: retried until its 30 attempts run out, then failed with that count', async () => {
    const receiver = await newReceiver(() => ({ status: 500 }));
    const key = uniqueId('renewal');
    assert.equal((await post(key, await reminderBody(receiver, 60_000))).status, 202);

    assert.deepEqual(await result(key), { state: 'failed', attempts: 30 });
    assert.equal(receiver.requests.length, 30);
    assert.ok(receiver.requests.every((request) => request.key === key));
    const view = await get(key);
    assert.equal(view.body.status, 'failed');
    const attempts = view.body.attempts as { attempt: number; status_code: number }[];
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.status_code]),
      Array.from({ length: 30 }, (_, i) => [i + 1, 500]),
    );
    assert.match(String(view.body.last_error), /^gave up: HTTP 500/);
  });
});

function issuePaths(result: ApiResult): string[] {
  return ((result.body.issues ?? []) as { path: string }[]).map((issue) => issue.path);
}
