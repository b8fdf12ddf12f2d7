import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { setCurrentVersion } from '../src/temporal/deployments';
import { inspectEvent } from '../src/app/inspect';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult } from '../src/workflows';
import { paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { type Answer, type Receiver, type ReceivedRequest } from '../testkit/receiver';
import { useReceiver, useTestStack } from '../testkit/hooks';
import {
  bundleWorkflows,
  NEXT_BUILD_WORKFLOWS,
  historyFacts,
  runVersion,
  startVersionedWorker,
  uniqueDeploymentName,
  type VersionedWorker,
} from './support/versioned-workers';

// An operator's Reset (docs/operations.md, "Reset"), made as the Temporal UI makes it
// (ResetWorkflowExecution): whatever point a payment run is reset to, the run that follows applies
// nothing twice (the claim, the outbox rows) and repeats each downstream call under its one key.

/** Calls answered 503 with Retry-After: 1 while held (a carrier or ERP retrying). */
const held = new Set<string>();
/** Calls refused for good (a 4xx: the flow compensates). */
const refused = new Set<string>();

function behaviour(request: ReceivedRequest): Answer {
  if (held.has(request.key)) return { status: 503, headers: { 'retry-after': '1' } };
  if (refused.has(request.key)) return { status: 422 };
  return { status: 200 };
}

const carrier = useReceiver(behaviour);
const erp = useReceiver(behaviour);
const stack = useTestStack(() => ({ config: { carrierUrl: carrier.url, erpUrl: erp.url } }));

async function postPayment(setUp: (eventId: string) => void = () => {}): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId });
  setUp(event.id);
  assert.equal((await postWebhook(stack, event)).status, 202);
  return event.id;
}

const handle = (eventId: string) => stack.client.workflow.getHandle(paymentWorkflowId(eventId));

/** The IDs of the run's WorkflowTaskCompleted events: the reset points the UI offers. */
async function workflowTasks(run: WorkflowHandle) {
  const events = (await run.fetchHistory()).events ?? [];
  return events.filter((e) => e.workflowTaskCompletedEventAttributes).map((e) => e.eventId!);
}

/** Resets the run as the UI does and returns the new run's ID. */
async function reset(
  eventId: string,
  point: 'first' | 'last',
  postResetOperations: temporal.api.workflow.v1.IPostResetOperation[] = [],
): Promise<string> {
  const { runId } = await handle(eventId).describe();
  const tasks = await workflowTasks(handle(eventId));
  assert.ok(tasks.length > 0, 'a run with a completed workflow task');
  const { runId: newRunId } = await stack.client.workflowService.resetWorkflowExecution({
    namespace: stack.client.options.namespace,
    workflowExecution: { workflowId: paymentWorkflowId(eventId), runId },
    workflowTaskFinishEventId: point === 'first' ? tasks[0]! : tasks.at(-1)!,
    reason: `test: reset to the ${point} workflow task`,
    requestId: randomUUID(),
    identity: 'reset.test',
    postResetOperations,
  });
  assert.ok(newRunId && newRunId !== runId);
  return newRunId;
}

/** What was applied for the event, downstream (per key) and in PostgreSQL. */
async function effects(eventId: string) {
  const keys = (receiver: Receiver) =>
    [...receiver.keys.entries()]
      .filter(([key]) => key.startsWith(`${eventId}:`))
      .map(([key, record]) => ({ key, applied: record.applied, bodies: record.bodies.size }))
      .sort((a, b) => a.key.localeCompare(b.key));
  const view = (await inspectEvent(stack.pool, stack.client, eventId))!;
  return {
    outcome: view.outcome,
    ledger: view.ledger.map((entry) => entry.kind),
    deliveries: view.deliveries.map((row) => [row.target, row.status]),
    carrier: keys(carrier),
    erp: keys(erp),
  };
}

/** Every key applied once (a refused one never), sent with one body. */
function assertOnce(found: Awaited<ReturnType<typeof effects>>) {
  for (const record of [...found.carrier, ...found.erp]) {
    assert.equal(
      record.applied,
      refused.has(record.key) ? 0 : 1,
      `${record.key} applied once (a refusal never)`,
    );
    assert.equal(record.bodies, 1, `${record.key} sent with one body`);
  }
}

async function resultOf(eventId: string, runId?: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId), runId).result();
}

describe('reset of a payment run', () => {
  test('a finished run reset to its first, then its last workflow task: nothing applies twice', async () => {
    // One carrier 503 first, so the run has more than one workflow task.
    const eventId = await postPayment((id) => held.add(`${id}:carrier:release_hold`));
    await waitFor('the carrier answering 503', async () =>
      carrier.keys.get(`${eventId}:carrier:release_hold`),
    );
    held.delete(`${eventId}:carrier:release_hold`);
    assert.equal((await resultOf(eventId)).outcome, 'applied');
    const before = await effects(eventId);
    assert.deepEqual(before.ledger, ['capture']);
    assertOnce(before);
    assert.ok((await workflowTasks(handle(eventId))).length > 1);

    const first = await reset(eventId, 'first');
    assert.equal((await resultOf(eventId, first)).outcome, 'applied');
    assert.deepEqual(await effects(eventId), before);

    const last = await reset(eventId, 'last');
    assert.equal((await resultOf(eventId, last)).outcome, 'applied');
    assert.deepEqual(await effects(eventId), before);
  });

  test('reset while the carrier delivery retries: one release, under its one key', async () => {
    const key = (id: string) => `${id}:carrier:release_hold`;
    const eventId = await postPayment((id) => held.add(key(id)));
    await waitFor(
      'the carrier answering 503 twice',
      async () => (carrier.keys.get(key(eventId))?.requests ?? 0) >= 2,
    );
    const newRun = await reset(eventId, 'last');
    await waitFor('the new run retrying the same key', async () => {
      const { events = [] } = await stack.client.workflow
        .getHandle(paymentWorkflowId(eventId), newRun)
        .fetchHistory();
      return (events ?? []).some((e) => e.activityTaskScheduledEventAttributes);
    });
    held.delete(key(eventId));
    assert.equal((await resultOf(eventId, newRun)).outcome, 'applied');
    const found = await effects(eventId);
    assert.deepEqual(found.ledger, ['capture']);
    assert.deepEqual(found.deliveries, [
      ['carrier', 'delivered'],
      ['erp', 'delivered'],
    ]);
    assert.deepEqual(
      found.carrier.map((record) => record.key),
      [key(eventId)],
    );
    assertOnce(found);
  });

  test('reset mid-compensation: one reversal, one re-hold', async () => {
    const rehold = (id: string) => `${id}:carrier:rehold`;
    const eventId = await postPayment((id) => {
      refused.add(`${id}:erp:post_ledger_entry`);
      held.add(rehold(id));
    });
    await waitFor(
      'the re-hold retrying',
      async () => (carrier.keys.get(rehold(eventId))?.requests ?? 0) >= 2,
    );
    const newRun = await reset(eventId, 'last');
    held.delete(rehold(eventId));
    const result = await resultOf(eventId, newRun);
    assert.equal(result.outcome, 'needs_review');
    assert.equal(result.compensated, true);
    const found = await effects(eventId);
    assert.deepEqual(found.ledger.sort(), ['capture', 'reversal']);
    assert.deepEqual(
      found.carrier.map((record) => record.key),
      [rehold(eventId), `${eventId}:carrier:release_hold`],
    );
    assertOnce(found);
  });
});

describe('reset with Worker Deployments', () => {
  const deployment = uniqueDeploymentName();
  const workers: VersionedWorker[] = [];
  let nextBuildCode: string;

  before(async () => {
    await stack.stopWorker();
    nextBuildCode = await bundleWorkflows(NEXT_BUILD_WORKFLOWS);
  });
  after(async () => {
    for (const worker of workers.reverse()) await worker.stop();
  });

  test('a pinned run reset onto the current version runs its new code, nothing twice', async () => {
    workers.push(await startVersionedWorker(stack, deployment, 'v1'));
    await setCurrentVersion(stack.client, deployment, 'v1');
    const eventId = await postPayment();
    assert.equal((await resultOf(eventId)).outcome, 'applied');
    assert.deepEqual(await runVersion(handle(eventId)), { buildId: 'v1', behavior: 'pinned' });
    const before = await effects(eventId);

    workers.push(await startVersionedWorker(stack, deployment, 'v2', nextBuildCode));
    await setCurrentVersion(stack.client, deployment, 'v2');
    // Reset to the first task and pinned to v2: v2's code runs the whole run again.
    const newRun = await reset(eventId, 'first', [
      {
        updateWorkflowOptions: {
          workflowExecutionOptions: {
            versioningOverride: {
              pinned: {
                behavior:
                  temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior
                    .PINNED_OVERRIDE_BEHAVIOR_PINNED,
                version: { deploymentName: deployment, buildId: 'v2' },
              },
            },
          },
          updateMask: { paths: ['versioning_override'] },
        },
      },
    ]);
    const run = stack.client.workflow.getHandle(paymentWorkflowId(eventId), newRun);
    assert.equal(((await run.result()) as PaymentWorkflowResult).outcome, 'applied');
    assert.equal((await runVersion(run)).buildId, 'v2');
    const facts = await historyFacts(run);
    assert.equal(facts.nextBuildCode, true, "v2's code ran it");
    assert.deepEqual(
      facts.workflowTaskFailures.filter((m) => !/reset/i.test(m)),
      [],
    );
    assert.deepEqual(await effects(eventId), before);
  });
});
