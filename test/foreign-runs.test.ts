/**
 * A run settle did not start may hold the workflow ID settle is about to use: anyone who can reach
 * Temporal's frontend can start `paymentWorkflow` as `payment:<event id>` with a long start delay
 * before the real event arrives. settle must still apply the event once: the squatting run is
 * terminated, recorded and listed, and settle's own run takes the ID. The same holds for replay and
 * for reminders, and a forged reminder run cannot deliver early or deliver a cancelled reminder.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { replayEvent } from '../src/app/replay';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId, reminderWorkflowId } from '../src/domain/ids';
import { shortHash } from '../src/lib/hash';
import type { PaymentWorkflowResult } from '../src/workflows';
import {
  countRows,
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../tools/harness/harness';
import { startReceiver, type Receiver } from '../tools/harness/receiver';
import { runSettle, stackEnv } from './support/settle-cli';
import { remindersApi } from './support/reminders';

let stack: TestStack;
let carrier: Receiver;
let customer: Receiver;

before(async () => {
  carrier = await startReceiver();
  customer = await startReceiver();
  stack = await startTestStack({ config: { carrierUrl: carrier.url, allowPrivateTargets: true } });
});
after(async () => {
  await stack.close();
  await carrier.close();
  await customer.close();
});

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

async function statusOf(workflowId: string, runId: string): Promise<string> {
  return (await stack.client.workflow.getHandle(workflowId, runId).describe()).status.name;
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
