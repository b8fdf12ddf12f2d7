/**
 * A run settle did not start may hold the workflow ID settle is about to use: anyone who can reach
 * Temporal's frontend can start `paymentWorkflow` as `payment:<event id>` with a long start delay
 * before the real event arrives. settle must still apply the event once: the squatting run is
 * terminated, recorded and listed, and settle's own run takes the ID. The same holds for replay and
 * for reminders, and a forged reminder run cannot deliver early or deliver a cancelled reminder.
 * settle knows its own runs by the run IDs it recorded when it started them: a memo nobody can read,
 * or one copied from a run of settle's, makes a run neither an error nor settle's.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { inspectEvent } from '../src/app/inspect';
import { replayEvent } from '../src/app/replay';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId, reminderWorkflowId } from '../src/domain/ids';
import { downstreamIdempotencyKey } from '../src/domain/outbox';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../src/temporal/payload-codec';
import { shortHash } from '../src/lib/hash';
import {
  cancelReminderSignal,
  type PaymentWorkflowResult,
  type ReminderWorkflowResult,
} from '../src/workflows';
import { countRows, paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { useReceiver, useTestStack } from '../testkit/hooks';
import { runSettle, stackEnv } from './support/settle-cli';
import { remindersApi } from './support/reminders';

/** Shipments whose carrier release is answered 503 (Retry-After: 2) the first time. */
const busyOnce = new Set<string>();

const carrier = useReceiver((request) =>
  busyOnce.has(String(request.json.shipment_id)) && request.attempt === 1
    ? { status: 503, headers: { 'retry-after': '2' } }
    : { status: 200 },
);
const customer = useReceiver();
const stack = useTestStack(() => ({ config: { carrierUrl: carrier.url, allowPrivateTargets: true } }));

async function newShipment(): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  return shipmentId;
}

/** What someone with reach to Temporal's frontend does: take the ID, to run in 30 days. */
async function squat(workflowType: string, workflowId: string, args: unknown[] = [{}], startDelay = '720h') {
  const handle = await stack.client.workflow.start(workflowType, {
    taskQueue: stack.taskQueue,
    workflowId,
    args,
    ...(startDelay ? { startDelay } : {}),
  });
  return handle.firstExecutionRunId;
}

/** A run's status, read raw: a memo no codec can read does not stop the look. */
async function statusOf(workflowId: string, runId: string): Promise<string> {
  const described = await stack.client.workflowService.describeWorkflowExecution({
    namespace: stack.client.options.namespace,
    execution: { workflowId, runId },
  });
  const status = described.workflowExecutionInfo?.status ?? 0;
  return temporal.api.enums.v1.WorkflowExecutionStatus[status]!.replace('WORKFLOW_EXECUTION_STATUS_', '');
}

type Listed = { kind: string; event_id: string; detail: string; next_step: string };

async function listedForeign(eventId: string): Promise<Listed[]> {
  const listed = await runSettle(['exceptions', '--kind', 'unadmitted_run', '--json'], stackEnv(stack));
  assert.equal(listed.code, 0, listed.stderr);
  return (JSON.parse(listed.stdout) as { exceptions: Listed[] }).exceptions.filter(
    (row) => row.event_id === eventId,
  );
}

function releasesOf(shipmentId: string): number {
  return carrier.requests.filter((request) => request.json.shipment_id === shipmentId).length;
}

/** The event applied once by settle's run, and the squatter terminated, recorded and listed. */
async function assertTakenBack(eventId: string, shipmentId: string, squatterRunId: string, runId: string) {
  assert.notEqual(runId, squatterRunId);
  const result: PaymentWorkflowResult = await stack.client.workflow
    .getHandle(paymentWorkflowId(eventId), runId)
    .result();
  assert.equal(result.outcome, 'applied');
  assert.equal(await countRows(stack.pool, 'ledger_entries', eventId), 1);
  await waitFor('the carrier release', async () => releasesOf(shipmentId) === 1 || undefined);
  assert.equal(releasesOf(shipmentId), 1);
  assert.equal(await statusOf(paymentWorkflowId(eventId), squatterRunId), 'TERMINATED');
  const listed = await listedForeign(eventId);
  assert.equal(listed.length, 1, JSON.stringify(listed));
  assert.match(listed[0]!.detail, new RegExp(`run ID ${squatterRunId}`));
  assert.match(listed[0]!.detail, /not started by settle and held this workflow ID/);
  assert.match(listed[0]!.next_step, /frontend/);
}

describe('a run settle did not start holds an event’s workflow ID', () => {
  test('with a start delay: the signed event is applied once, the run terminated and listed', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const squatter = await squat('paymentWorkflow', paymentWorkflowId(event.id));

    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    assert.equal(reply.body.status, 'accepted');
    await assertTakenBack(event.id, shipmentId, squatter, String(reply.body.run_id));

    // The provider's retry is now a duplicate of settle's own run.
    const again = await postWebhook(stack, event);
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'duplicate');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });

  test('one that already failed on its input: settle still starts its own', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const squatter = await squat('paymentWorkflow', paymentWorkflowId(event.id), [{}], '');
    await waitFor('the bad-input run to fail', async () =>
      (await statusOf(paymentWorkflowId(event.id), squatter)) === 'FAILED' ? true : undefined,
    );
    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    const result: PaymentWorkflowResult = await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id), String(reply.body.run_id))
      .result();
    assert.equal(result.outcome, 'applied');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });

  test('two deliveries at once: one accepted, one duplicate, one effect', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const squatter = await squat('paymentWorkflow', paymentWorkflowId(event.id));
    const replies = await Promise.all([postWebhook(stack, event), postWebhook(stack, event)]);
    assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, 202]);
    const accepted = replies.find((reply) => reply.status === 202)!;
    await assertTakenBack(event.id, shipmentId, squatter, String(accepted.body.run_id));
  });

  test('settle replay takes the ID back from a run started after the event applied', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    const squatter = await squat('paymentWorkflow', paymentWorkflowId(event.id));

    const replayed = await replayEvent(stack, event.id);
    assert.equal(replayed.status, 'replayed', JSON.stringify(replayed));
    assert.equal(await statusOf(paymentWorkflowId(event.id), squatter), 'TERMINATED');
    assert.equal((await listedForeign(event.id)).length, 1);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });
});

type Payload = temporal.api.common.v1.IPayload;
const json = (value: unknown): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(JSON.stringify(value)),
});

/** A memo field no codec can read: "encrypted" under a key nobody holds. */
const unreadableMemo = (): Record<string, Payload> => ({
  settleRunMark: {
    metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from('nobody') },
    data: randomBytes(64),
  },
});

/** A start as Temporal's frontend takes it from anyone, payloads as given (nothing encoded by settle). */
async function rawStart(
  workflowId: string,
  options: {
    workflowType?: string;
    taskQueue?: string;
    input?: Payload[];
    memo?: Record<string, Payload>;
    startDelay?: boolean;
  },
): Promise<string> {
  const started: temporal.api.workflowservice.v1.IStartWorkflowExecutionResponse =
    await stack.client.workflowService.startWorkflowExecution({
      namespace: stack.client.options.namespace,
      workflowId,
      workflowType: { name: options.workflowType ?? 'paymentWorkflow' },
      taskQueue: { name: options.taskQueue ?? stack.taskQueue },
      input: { payloads: options.input ?? [json({})] },
      ...(options.memo ? { memo: { fields: options.memo } } : {}),
      ...(options.startDelay ? { workflowStartDelay: msToTs('720h') } : {}),
      requestId: randomUUID(),
      identity: 'someone with reach to the frontend',
    });
  return started.runId!;
}

/** A run's memo and input, byte for byte as Temporal stores them. */
async function bytesOf(workflowId: string, runId: string) {
  const namespace = stack.client.options.namespace;
  const described = await stack.client.workflowService.describeWorkflowExecution({
    namespace,
    execution: { workflowId, runId },
  });
  const history = await stack.client.workflowService.getWorkflowExecutionHistory({
    namespace,
    execution: { workflowId, runId },
  });
  const started = history.history!.events![0]!.workflowExecutionStartedEventAttributes!;
  return {
    memo: described.workflowExecutionInfo!.memo!.fields as Record<string, Payload>,
    input: started.input!.payloads!,
  };
}

describe('a run under an event’s ID that settle cannot read, or that copies settle’s', () => {
  test('a memo nobody can decode: the event is accepted, applied once, the run ended and listed', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const squatter = await rawStart(paymentWorkflowId(event.id), {
      memo: unreadableMemo(),
      startDelay: true,
    });

    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    await assertTakenBack(event.id, shipmentId, squatter, String(reply.body.run_id));
    const again = await postWebhook(stack, event);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.status, 'duplicate');
  });

  test('settle replay past a run with an unreadable memo: it is ended, listed, and the event stays applied once', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202);
    await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    const squatter = await rawStart(paymentWorkflowId(event.id), {
      memo: unreadableMemo(),
      startDelay: true,
    });

    const replayed = await replayEvent(stack, event.id);
    assert.equal(replayed.status, 'replayed', JSON.stringify(replayed));
    assert.equal(replayed.after, 'applied');
    assert.notEqual(replayed.run_id, squatter);
    assert.equal(await statusOf(paymentWorkflowId(event.id), squatter), 'TERMINATED');
    const listed = await listedForeign(event.id);
    assert.equal(listed.length, 1, JSON.stringify(listed));
    assert.match(listed[0]!.detail, new RegExp(`run ID ${squatter}`));
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(releasesOf(shipmentId), 1);
  });

  test('settle inspect past a run with an unreadable memo: it shows settle’s own run, read raw', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202);
    await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    const squatter = await rawStart(paymentWorkflowId(event.id), {
      memo: unreadableMemo(),
      startDelay: true,
    });

    const inspected = await inspectEvent(stack.pool, stack.client, event.id);
    assert.equal(inspected?.workflow_error, undefined, JSON.stringify(inspected));
    assert.deepEqual(
      { status: inspected?.workflow?.status, run_id: inspected?.workflow?.run_id },
      { status: 'COMPLETED', run_id: reply.body.run_id },
    );
    assert.notEqual(inspected?.workflow?.run_id, squatter);
    assert.equal(inspected?.outcome, 'applied');
  });

  test('a copy of settle’s closed run, memo and input byte for byte, on another task queue: replay applies for real', async () => {
    // The event arrives before its shipment: settle's run closes `unmatched`.
    const shipmentId = uniqueId('SHP');
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202);
    const settleRun = String(reply.body.run_id);
    const first: PaymentWorkflowResult = await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id), settleRun)
      .result();
    assert.equal(first.outcome, 'unmatched');
    await addShipments(stack.pool, [shipmentId]);

    // Someone copies the closed run's memo (settle's mark included) and input onto a run of their own.
    const { memo, input } = await bytesOf(paymentWorkflowId(event.id), settleRun);
    assert.ok('settleRunMark' in memo, 'the copied memo carries the mark');
    const copy = await rawStart(paymentWorkflowId(event.id), {
      taskQueue: `${stack.taskQueue}-elsewhere`,
      memo,
      input,
    });

    const replayed = await replayEvent(stack, event.id, { decideTimeoutMs: 60_000 });
    assert.equal(replayed.status, 'replayed', JSON.stringify(replayed));
    assert.equal(replayed.joined_running_run, false);
    assert.deepEqual([replayed.before, replayed.after, replayed.changed], ['unmatched', 'applied', true]);
    assert.ok(![copy, settleRun].includes(replayed.run_id), replayed.run_id);
    assert.equal(await statusOf(paymentWorkflowId(event.id), copy), 'TERMINATED');
    const listed = await listedForeign(event.id);
    assert.equal(listed.length, 1, JSON.stringify(listed));
    assert.match(listed[0]!.detail, new RegExp(`run ID ${copy}`));
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    await waitFor('the carrier release', async () => releasesOf(shipmentId) === 1 || undefined);
  });

  test('a paused run under the ID: ended and replaced, the event applied once', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    // A type no worker knows keeps it open on settle's own queue; then it is paused.
    const squatter = await rawStart(paymentWorkflowId(event.id), { workflowType: 'squatterWorkflow' });
    await stack.client.workflowService.pauseWorkflowExecution({
      namespace: stack.client.options.namespace,
      workflowId: paymentWorkflowId(event.id),
      runId: squatter,
      identity: 'someone with reach to the frontend',
      reason: 'hold the ID',
      requestId: randomUUID(),
    });
    await waitFor(
      'the run to be paused',
      async () => (await statusOf(paymentWorkflowId(event.id), squatter)) === 'PAUSED' || undefined,
    );

    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    await assertTakenBack(event.id, shipmentId, squatter, String(reply.body.run_id));
  });

  test('a copy of an admitted event’s input under another workflow ID: its activities refuse, nothing is sent twice', async () => {
    const shipmentId = await newShipment();
    busyOnce.add(shipmentId);
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const releaseKey = downstreamIdempotencyKey(event.id, 'carrier', 'release_hold');
    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202);
    // settle's run has claimed the event and its carrier release waits out a Retry-After.
    await waitFor(
      'the first release attempt',
      async () => carrier.keys.get(releaseKey)?.requests === 1 || undefined,
    );

    const copy = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: uniqueId('copy'),
      args: [{ event }],
    });
    const failure = await copy.result().then(
      () => assert.fail('the copy completed'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof WorkflowFailedError, String(failure));
    assert.ok(failure.cause instanceof ActivityFailure, String(failure.cause));
    assert.ok(failure.cause.cause instanceof ApplicationFailure, String(failure.cause.cause));
    assert.equal(failure.cause.cause.type, 'wrong_workflow_id');

    const result: PaymentWorkflowResult = await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id), String(reply.body.run_id))
      .result();
    assert.equal(result.outcome, 'applied');
    // The 503 and settle's own retry: the copy sent nothing and counted no attempt.
    assert.equal(carrier.keys.get(releaseKey)?.requests, 2);
    assert.equal(carrier.keys.get(releaseKey)?.applied, 1);
    const { rows } = await stack.pool.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM outbox WHERE idempotency_key = $1`,
      [releaseKey],
    );
    assert.deepEqual(rows, [{ status: 'delivered', attempts: 2 }]);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });
});

async function metric(name: string, labels: string): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  assert.equal(response.status, 200);
  const escaped = `${name}${labels}`.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)`, 'm').exec(await response.text())?.[1] ?? 0);
}
const invalidRuns = () => metric('settle_unadmitted_runs_total', '{reason="invalid_input"}');

/** Starts a run as an attacker would, and waits for it to fail: its failure's type. */
async function failedRun(workflowType: string, workflowId: string, args: unknown[]) {
  const handle = await stack.client.workflow.start(workflowType, {
    taskQueue: stack.taskQueue,
    workflowId,
    args,
  });
  const error = await handle.result().then(
    () => assert.fail('the run completed'),
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof WorkflowFailedError, String(error));
  return { runId: handle.firstExecutionRunId, type: (error.cause as { type?: string } | undefined)?.type };
}

/** The run listed once as an unadmitted_run that failed on its input, with its next step. */
async function assertListedInvalid(listedUnder: string, workflowType: string, runId: string) {
  const listed = await listedForeign(listedUnder);
  assert.equal(listed.length, 1, JSON.stringify(listed));
  assert.equal(listed[0]!.kind, 'unadmitted_run');
  assert.match(listed[0]!.detail, new RegExp(`run ID ${runId}, ${workflowType}\\)`));
  assert.match(listed[0]!.detail, /failed on its input before any step; nothing was applied/);
  assert.match(listed[0]!.next_step, /frontend/);
}

describe('a run settle did not start that fails on its input', () => {
  test('is recorded by the worker and listed; the real event with that ID still applies once', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const counted = await invalidRuns();
    const bad = await failedRun('paymentWorkflow', paymentWorkflowId(event.id), [{}]);
    assert.equal(bad.type, 'invalid_workflow_input');
    await assertListedInvalid(event.id, 'paymentWorkflow', bad.runId);
    assert.equal(await invalidRuns(), counted + 1);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 0);

    const reply = await postWebhook(stack, event);
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    const result: PaymentWorkflowResult = await stack.client.workflow
      .getHandle(paymentWorkflowId(event.id), String(reply.body.run_id))
      .result();
    assert.equal(result.outcome, 'applied');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    await waitFor('the carrier release', async () => releasesOf(shipmentId) === 1 || undefined);
    // The bad run stays listed (someone reached the frontend) until an operator resolves it.
    await assertListedInvalid(event.id, 'paymentWorkflow', bad.runId);
  });

  test('an input that is not an event at all, or a huge one: the record stays small', async () => {
    const eventId = uniqueId('pay');
    const notAnEvent = await failedRun('paymentWorkflow', paymentWorkflowId(eventId), ['payment please']);
    assert.equal(notAnEvent.type, 'invalid_workflow_input');
    await assertListedInvalid(eventId, 'paymentWorkflow', notAnEvent.runId);

    const hugeId = uniqueId('pay');
    const huge = paymentEvent({ shipmentId: 'x'.repeat(300_000), type: 'payment.settled' });
    const run = await failedRun('paymentWorkflow', paymentWorkflowId(hugeId), [{ event: huge }]);
    await assertListedInvalid(hugeId, 'paymentWorkflow', run.runId);
    const { rows } = await stack.pool.query<Record<string, unknown>>(
      'SELECT * FROM unadmitted_runs WHERE event_id = $1',
      [hugeId],
    );
    assert.equal(rows.length, 1);
    assert.ok(
      JSON.stringify(rows[0]).length < 1_000,
      `the stored row: ${JSON.stringify(rows[0]).length} characters`,
    );
    assert.equal(rows[0]!.reason, 'invalid_input');
    assert.match(String(rows[0]!.payload_sha256), /^[0-9a-f]{64}$/);
    assert.equal(rows[0]!.shipment_id, null);
  });

  test('a run under a workflow ID of no event is listed by its short hash', async () => {
    const workflowId = uniqueId('squat');
    const bad = await failedRun('paymentWorkflow', workflowId, [{ event: { id: 'evt' } }]);
    await assertListedInvalid(`workflow-${shortHash(workflowId)}`, 'paymentWorkflow', bad.runId);
  });

  test('a reminder run with bad input is listed under its delivery ID; the reminder is then created', async () => {
    const key = uniqueId('rem');
    const bad = await failedRun('reminderWorkflow', reminderWorkflowId(key), [
      { deliveryId: key, dueAt: 'soon' },
    ]);
    assert.equal(bad.type, 'invalid_workflow_input');
    await assertListedInvalid(key, 'reminderWorkflow', bad.runId);
    const created = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
      key,
      body: {
        contract_id: uniqueId('CT'),
        due_at: new Date(Date.now() + 24 * 3600_000).toISOString(),
        webhook_url: `${customer.url}/hooks/renewal`,
      },
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const running = await stack.client.workflow.getHandle(reminderWorkflowId(key)).describe();
    assert.equal(running.status.name, 'RUNNING');
    assert.notEqual(running.runId, bad.runId);
    // Still listed once, as what it was: a run that failed on its input.
    await assertListedInvalid(key, 'reminderWorkflow', bad.runId);
  });
});

describe('reminders', () => {
  const post = (key: string, body: unknown) =>
    remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', { key, body });
  const reminderBody = (dueInMs: number) => ({
    contract_id: uniqueId('CT'),
    due_at: new Date(Date.now() + dueInMs).toISOString(),
    webhook_url: `${customer.url}/hooks/renewal`,
  });
  const deliveriesOf = (key: string) =>
    customer.requests.filter((request) => request.json.delivery_id === key).length;
  const stateOf = async (key: string) =>
    (
      await stack.pool.query<{ state: string; attempts: number }>(
        'SELECT state, attempts FROM reminders WHERE delivery_id = $1',
        [key],
      )
    ).rows[0];

  test('a squatted reminder ID is taken back when the reminder is created', async () => {
    const key = uniqueId('rem');
    const squatter = await squat('reminderWorkflow', reminderWorkflowId(key), [
      { deliveryId: key, dueAt: new Date().toISOString() },
    ]);
    const created = await post(key, reminderBody(24 * 3600_000));
    assert.equal(created.status, 202, JSON.stringify(created.body));
    assert.equal(await statusOf(reminderWorkflowId(key), squatter), 'TERMINATED');
    assert.equal((await listedForeign(key)).length, 1);
    const running = await stack.client.workflow.getHandle(reminderWorkflowId(key)).describe();
    assert.equal(running.status.name, 'RUNNING');
    assert.notEqual(running.runId, squatter);
  });

  test('a forged run cannot deliver a reminder before its due_at, nor fail it', async () => {
    const key = uniqueId('rem');
    assert.equal((await post(key, reminderBody(24 * 3600_000))).status, 202);
    const forged = await stack.client.workflow.start('reminderWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: uniqueId('forged'),
      args: [{ deliveryId: key, dueAt: new Date(Date.now() - 60_000).toISOString() }],
    });
    await forged.result().catch(() => undefined);
    assert.equal(deliveriesOf(key), 0, 'nothing was sent');
    assert.deepEqual(await stateOf(key), { state: 'scheduled', attempts: 0 });
  });

  test('a forged cancel signal does not end a scheduled reminder: it is delivered once, when due', async () => {
    const key = uniqueId('rem');
    assert.equal((await post(key, reminderBody(4_000))).status, 202);
    const handle = stack.client.workflow.getHandle(reminderWorkflowId(key));
    await handle.signal(cancelReminderSignal);
    const result: ReminderWorkflowResult = await handle.result();
    assert.equal(result.state, 'succeeded');
    assert.equal(deliveriesOf(key), 1);
    assert.deepEqual(await stateOf(key), { state: 'succeeded', attempts: 1 });
  });

  test('a cancellation through settle still ends the run at once', async () => {
    const key = uniqueId('rem');
    assert.equal((await post(key, reminderBody(24 * 3600_000))).status, 202);
    const cancelled = await remindersApi(stack.gatewayUrl, stack.apiToken, 'DELETE', `/reminders/${key}`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const result: ReminderWorkflowResult = await stack.client.workflow
      .getHandle(reminderWorkflowId(key))
      .result();
    assert.equal(result.state, 'cancelled');
    assert.equal(deliveriesOf(key), 0);
  });

  test('a forged run cannot deliver a cancelled reminder', async () => {
    const key = uniqueId('rem');
    assert.equal((await post(key, reminderBody(60_000))).status, 202);
    const cancelled = await remindersApi(stack.gatewayUrl, stack.apiToken, 'DELETE', `/reminders/${key}`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const past = await stack.client.workflow.start('reminderWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: uniqueId('forged'),
      args: [{ deliveryId: key, dueAt: new Date(Date.now() - 60_000).toISOString() }],
    });
    await past.result().catch(() => undefined);
    assert.equal(deliveriesOf(key), 0, 'nothing was sent');
    assert.equal((await stateOf(key))?.state, 'cancelled');
  });
});
