import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  DeploymentError,
  describeDeployment,
  describeDeploymentVersion,
  setCurrentVersion,
  setRampingVersion,
  waitDrained,
} from '../src/temporal/deployments';
import { inspectEvent } from '../src/app/inspect';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult, ReminderWorkflowResult } from '../src/workflows';
import {
  countRows,
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import { remindersApi } from './support/reminders';
import { runSettle, stackEnv } from './support/settle-cli';
import {
  bundleWorkflows,
  NEXT_BUILD_WORKFLOWS,
  historyFacts,
  runVersion,
  startVersionedWorker,
  uniqueDeploymentName,
  type VersionedWorker,
} from './support/versioned-workers';

// The rollout of docs/operations.md, "Worker Deployments", on the dev server: build v1 current, a
// payment run held in a carrier retry, build v2 (workflow code v1's histories would not replay)
// deployed, ramped and rolled back, made current; the held run finishes on v1, new runs go to v2, a
// reminder started on v1 wakes on v2, every effect once; v1 drains and stops.

let stack: TestStack;
let carrier: Receiver;
let erp: Receiver;
let hooks: Receiver;
let nextBuildCode: string;
const deployment = uniqueDeploymentName();
const workers: VersionedWorker[] = [];
/** The carrier answers this event's calls 503 with Retry-After: 1 (a carrier holding its delivery). */
let heldEventId: string | undefined;
/**
 * The customer's endpoint answers 503 with Retry-After: 1 until v2 is current: however long the switch
 * takes on a loaded machine, the reminder (due in seconds) is delivered by a workflow task after it.
 */
let v2Current = false;

before(async () => {
  carrier = await startReceiver((request) =>
    heldEventId && request.key.startsWith(`${heldEventId}:`)
      ? { status: 503, headers: { 'retry-after': '1' } }
      : { status: 200 },
  );
  erp = await startReceiver();
  hooks = await startReceiver(() =>
    v2Current ? { status: 200 } : { status: 503, headers: { 'retry-after': '1' } },
  );
  stack = await startTestStack({ worker: false, config: { carrierUrl: carrier.url, erpUrl: erp.url } });
  nextBuildCode = await bundleWorkflows(NEXT_BUILD_WORKFLOWS);
});

after(async () => {
  for (const worker of workers.reverse()) await worker.stop();
  await stack?.close();
  for (const receiver of [carrier, erp, hooks]) await receiver?.close();
});

async function startBuild(buildId: string, code?: string): Promise<VersionedWorker> {
  const worker = await startVersionedWorker(stack, deployment, buildId, code);
  workers.push(worker);
  return worker;
}

async function postPayment(options: { held?: boolean } = {}): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId });
  if (options.held) heldEventId = event.id;
  assert.equal((await postWebhook(stack, event)).status, 202);
  return event.id;
}

const handle = (eventId: string) => stack.client.workflow.getHandle(paymentWorkflowId(eventId));

/** Each of the event's downstream calls was applied once, under one key, with one body. */
async function assertOnce(eventId: string, buildId: string) {
  const view = (await inspectEvent(stack.pool, stack.client, eventId))!;
  // What `settle inspect` shows: the build the run is on.
  assert.deepEqual(view.workflow?.version, { deployment, build_id: buildId, behavior: 'pinned' });
  assert.equal(view.deliveries.length, 2);
  for (const row of view.deliveries) {
    assert.equal(row.status, 'delivered');
    const record = (row.target === 'carrier' ? carrier : erp).keys.get(row.idempotency_key);
    assert.ok(record, `${row.target} never received ${row.idempotency_key}`);
    assert.equal(record.applied, 1);
    assert.equal(record.bodies.size, 1, 'every attempt repeats the same request');
  }
  assert.equal(await countRows(stack.pool, 'claims', eventId), 1);
  assert.equal(await countRows(stack.pool, 'ledger_entries', eventId), 1);
}

test('a rollout: the held run finishes on v1, new runs on v2, the reminder moves, v1 drains', async () => {
  const v1 = await startBuild('v1');
  await assert.rejects(
    setCurrentVersion(stack.client, deployment, 'v9'),
    (error: unknown) => error instanceof DeploymentError && /v9/.test(error.message),
    'a build no worker polls is refused',
  );
  await setCurrentVersion(stack.client, deployment, 'v1');

  const held = await postPayment({ held: true });
  await waitFor('the carrier answering the held run 503 twice', async () =>
    [...carrier.keys.entries()].some(([key, record]) => key.startsWith(`${held}:`) && record.requests >= 2),
  );
  assert.deepEqual(await runVersion(handle(held)), { buildId: 'v1', behavior: 'pinned' });

  const v2 = await startBuild('v2', nextBuildCode);
  // Polling is not serving: v2 is inactive until made current or ramped.
  assert.equal(
    (await describeDeployment(stack.client, deployment)).versions.find((v) => v.build_id === 'v2')?.status,
    'inactive',
  );
  // A rollback mid-ramp: v2 at 50 %, then the ramp ended; v1 stays current.
  await setRampingVersion(stack.client, deployment, 'v2', 50);
  assert.deepEqual((await describeDeployment(stack.client, deployment)).ramping, {
    build_id: 'v2',
    percentage: 50,
  });
  await setRampingVersion(stack.client, deployment, null, 0);
  const rolledBack = await describeDeployment(stack.client, deployment);
  assert.equal(rolledBack.ramping, null);
  assert.equal(rolledBack.current_build_id, 'v1');

  // A reminder started on v1, delivered once v2 is current.
  const deliveryId = uniqueId('rem');
  const reminder = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
    key: deliveryId,
    body: {
      contract_id: uniqueId('CT'),
      due_at: new Date(Date.now() + 10_000).toISOString(),
      webhook_url: `${hooks.url}/hooks/renewal`,
      payload: { plan: 'annual' },
    },
  });
  assert.ok(reminder.status === 201 || reminder.status === 202, JSON.stringify(reminder.body));
  const reminderHandle = stack.client.workflow.getHandle(`reminder:${deliveryId}`);
  await waitFor('the reminder on v1', async () => (await runVersion(reminderHandle)).buildId === 'v1');

  // What an operator types: `settle deployment set-current`, then `describe --json`.
  const env = stackEnv(stack, { SETTLE_DEPLOYMENT_NAME: deployment });
  const refused = await runSettle(['deployment', 'set-current', 'v9'], env);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /^settle: set-current v9: /);
  const setCurrent = await runSettle(['deployment', 'set-current', 'v2', '--json'], env);
  assert.equal(setCurrent.code, 0, setCurrent.stderr);
  const currentAt = Date.now();
  v2Current = true;
  assert.equal(JSON.parse(setCurrent.stdout).current_build_id, 'v2');
  const view = await describeDeployment(stack.client, deployment);
  assert.equal(view.current_build_id, 'v2');
  assert.equal(view.versions.find((v) => v.build_id === 'v1')?.status, 'draining');

  const fresh = await postPayment();
  const freshResult: PaymentWorkflowResult = await handle(fresh).result();
  assert.equal(freshResult.outcome, 'applied');
  assert.deepEqual(await runVersion(handle(fresh)), { buildId: 'v2', behavior: 'pinned' });
  assert.equal((await historyFacts(handle(fresh))).nextBuildCode, true, "v2's code ran it");

  heldEventId = undefined;
  const heldResult: PaymentWorkflowResult = await handle(held).result();
  assert.equal(heldResult.outcome, 'applied');
  assert.deepEqual(await runVersion(handle(held)), { buildId: 'v1', behavior: 'pinned' });
  assert.deepEqual(await historyFacts(handle(held)), { workflowTaskFailures: [], nextBuildCode: false });

  const reminderResult: ReminderWorkflowResult = await reminderHandle.result();
  assert.ok(reminderResult, 'the reminder completed');
  assert.deepEqual(await runVersion(reminderHandle), { buildId: 'v2', behavior: 'auto_upgrade' });
  const delivered = hooks.keys.get(deliveryId);
  assert.equal(delivered?.applied, 1);
  assert.ok(delivered.appliedAt! >= currentAt, 'delivered after v2 became current');
  assert.deepEqual((await historyFacts(reminderHandle)).workflowTaskFailures, []);

  await assertOnce(held, 'v1');
  await assertOnce(fresh, 'v2');
  assert.equal(carrier.wouldHaveDoubleApplied + erp.wouldHaveDoubleApplied + hooks.wouldHaveDoubleApplied, 0);

  const drained = await runSettle(['deployment', 'wait-drained', 'v1', '--timeout', '2m', '--json'], env);
  assert.equal(drained.code, 0, drained.stderr);
  assert.equal(JSON.parse(drained.stdout).status, 'drained');
  const stillCurrent = await waitDrained(stack.client, deployment, 'v2', { timeoutMs: 1_000 }).catch(
    (error: unknown) => error,
  );
  assert.ok(stillCurrent instanceof DeploymentError && /v2 is current/.test(stillCurrent.message));
  await v1.stop();
  // v2 alone serves what comes next.
  const last = await postPayment();
  assert.equal(((await handle(last).result()) as PaymentWorkflowResult).outcome, 'applied');
  await assertOnce(last, 'v2');
  const v2Detail = await describeDeploymentVersion(stack.client, deployment, 'v2');
  assert.equal(v2Detail.status, 'current');
  assert.ok(v2Detail.task_queues.some((q) => q.name === stack.taskQueue));
  void v2;
});
