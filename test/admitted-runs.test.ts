/**
 * A payment run acts only on what settle admitted: a run started straight on Temporal's frontend (as
 * anyone who can reach it could, `temporal workflow start --type paymentWorkflow …`) changes nothing
 * unless settle's own door stored its event with the same payload hash. Such a run is refused without
 * effect, counted and listed as an exception with its next step, while events that came through the
 * door (webhook, import, replay, a start granted eagerly) keep applying once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WorkflowFailedError, WorkflowIdReusePolicy } from '@temporalio/client';
import { admitThenStart } from '../src/app/admit-payment-event';
import { importReport } from '../src/app/import';
import { replayEvent } from '../src/app/replay';
import { runMarkKey } from '../src/app/run-marks';
import { insertAdmittedEvent } from '../src/db/events';
import { addShipments, findShipment } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentEvent } from '../src/domain/payment-event';
import { payloadSha256 } from '../src/lib/hash';
import { clientOnWorkerConnection, startPaymentWorkflow } from '../src/client';
import { createWorker } from '../src/worker-runtime/create-worker';
import type { PaymentWorkflowResult } from '../src/workflows/payment';
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
import { runSettle, stackEnv } from './support/settle-cli';

let stack: TestStack;
let carrier: Receiver;
let erp: Receiver;
let worker: Awaited<ReturnType<typeof createWorker>>;
let running: Promise<void>;

before(async () => {
  carrier = await startReceiver();
  erp = await startReceiver();
  stack = await startTestStack({ worker: false, config: { carrierUrl: carrier.url, erpUrl: erp.url } });
  // The stack's worker, kept here so that a client on its own connection is granted eager start.
  worker = await createWorker({ config: stack.config, pool: stack.pool });
  running = worker.worker.run();
});

after(async () => {
  worker.worker.shutdown();
  await running;
  await worker.connection.close();
  await stack.close();
  await carrier.close();
  await erp.close();
});

async function newShipment(): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  return shipmentId;
}

/** Starts a payment run the way someone with reach to Temporal's frontend would: no gateway at all. */
async function startAroundSettle(event: PaymentEvent, workflowId = paymentWorkflowId(event.id)) {
  return stack.client.workflow.start('paymentWorkflow', {
    taskQueue: stack.taskQueue,
    workflowId,
    args: [{ event }],
  });
}

/** The run's failure: the reconcile's own ApplicationFailure (type, non-retryable). */
async function refusalOf(result: Promise<unknown>): Promise<{ type?: string; nonRetryable?: boolean }> {
  const error = await result.then(
    () => assert.fail('the run completed'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof WorkflowFailedError, String(error));
  const cause = (error.cause as { cause?: { type?: string; nonRetryable?: boolean } } | undefined)?.cause;
  return { type: cause?.type, nonRetryable: cause?.nonRetryable };
}

async function metric(name: string, labels = ''): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  assert.equal(response.status, 200, "the gateway's /metrics with the API token");
  const text = await response.text();
  const escaped = `${name}${labels}`.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** What a refused run must leave as it was: the shipment, and nothing written for the event ID. */
async function stateOf(eventId: string, shipmentId: string) {
  const shipment = await findShipment(stack.pool, shipmentId);
  return {
    paymentStatus: shipment?.paymentStatus,
    holdStatus: shipment?.holdStatus,
    claims: await countRows(stack.pool, 'claims', eventId),
    ledger: await countRows(stack.pool, 'ledger_entries', eventId),
    outbox: await countRows(stack.pool, 'outbox', eventId),
    downstreamCalls: carrier.requests.length + erp.requests.length,
  };
}

type ListedException = { kind: string; event_id: string; detail: string; next_step: string };

async function listedUnadmitted(): Promise<ListedException[]> {
  const listed = await runSettle(['exceptions', '--kind', 'unadmitted_run', '--json'], stackEnv(stack));
  assert.equal(listed.code, 0, listed.stderr);
  return (JSON.parse(listed.stdout) as { exceptions: ListedException[] }).exceptions;
}

async function resultOf(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

describe('a run started around settle', () => {
  test('for a new event ID changes nothing, is counted and listed with its next step', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const before = await stateOf(event.id, shipmentId);
    const countedBefore = await metric('settle_unadmitted_runs_total', '{reason="not_stored"}');

    const handle = await startAroundSettle(event);
    const refusal = await refusalOf(handle.result());
    assert.deepEqual(refusal, { type: 'unadmitted_run', nonRetryable: true });

    assert.deepEqual(await stateOf(event.id, shipmentId), before);
    assert.equal(before.paymentStatus, 'pending');
    assert.equal(before.holdStatus, 'held');
    assert.equal(await countRows(stack.pool, 'events', event.id), 0);
    // Counted once per run, although its local and its durable attempt both refused it.
    assert.equal(await metric('settle_unadmitted_runs_total', '{reason="not_stored"}'), countedBefore + 1);

    const listed = (await listedUnadmitted()).filter((row) => row.event_id === event.id);
    assert.equal(listed.length, 1, JSON.stringify(listed));
    assert.match(listed[0]!.detail, /never stored this event; nothing was applied/);
    assert.match(listed[0]!.next_step, /not started by settle/);
    assert.match(listed[0]!.next_step, /who can reach Temporal/);
    // The gauge is read from PostgreSQL at most once a second (a scrape flood reads it once).
    await waitFor(
      'the open-exceptions gauge to count the refused run',
      async () => (await metric('settle_open_exceptions', '{kind="unadmitted_run"}')) >= 1,
      30_000,
    );
  });

  test('does not keep its event ID from the real event when settle admits it later', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const forged = { ...event, data: { ...event.data, amount: 1 } };
    await refusalOf((await startAroundSettle(forged)).result());

    // The provider's own delivery of that ID: the refused run applied nothing, a new run applies it.
    const delivered = await postWebhook(stack, event);
    assert.equal(delivered.status, 202, JSON.stringify(delivered.body));
    assert.equal((await resultOf(event.id)).outcome, 'applied');
    const { rows } = await stack.pool.query<{ amount: string }>(
      'SELECT amount FROM ledger_entries WHERE event_id = $1',
      [event.id],
    );
    assert.deepEqual(
      rows.map((row) => Number(row.amount)),
      [12500],
    );
    assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'settled');
  });

  test('with a copy of an applied event, tampered, is refused and changes nothing', async () => {
    const shipmentId = await newShipment();
    const victim = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.captured' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    // The run's end: its release and its ledger entry delivered.
    assert.equal((await resultOf(event.id)).outcome, 'applied');
    const calls = carrier.requests.length + erp.requests.length;
    const countedBefore = await metric('settle_unadmitted_runs_total', '{reason="payload_differs"}');

    const tampered: [string, PaymentEvent][] = [
      ['amount', { ...event, data: { ...event.data, amount: 1 } }],
      ['shipment', { ...event, data: { ...event.data, shipment_id: victim } }],
      ['type', { ...event, type: 'payment.refunded' }],
    ];
    for (const [field, copy] of tampered) {
      const handle = await startAroundSettle(copy, `${paymentWorkflowId(event.id)}:${field}`);
      // Under a claimed ID the code stays the claim's, as before this check.
      assert.deepEqual(await refusalOf(handle.result()), {
        type: 'idempotency_key_reused',
        nonRetryable: true,
      });
    }

    assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'captured');
    assert.equal((await findShipment(stack.pool, victim))?.paymentStatus, 'pending');
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
    assert.equal(carrier.requests.length + erp.requests.length, calls);
    assert.equal(
      await metric('settle_unadmitted_runs_total', '{reason="payload_differs"}'),
      countedBefore + tampered.length,
    );
    const listed = (await listedUnadmitted()).filter((row) => row.event_id === event.id);
    assert.equal(listed.length, tampered.length, JSON.stringify(listed));
    for (const row of listed) assert.match(row.detail, /is not the one settle stored/);
  });

  test('for a stored event not yet reconciled, with another payload, is refused; replay applies the stored one', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    // What the door stored (its run not yet reconciled).
    await insertAdmittedEvent(stack.pool, {
      eventId: event.id,
      type: event.type,
      payload: event,
      payloadSha256: payloadSha256(event),
      workflowId: paymentWorkflowId(event.id),
      source: 'webhook',
    });
    const tampered = { ...event, data: { ...event.data, amount: 99_999_00 } };
    const refusal = await refusalOf((await startAroundSettle(tampered)).result());
    assert.deepEqual(refusal, { type: 'unadmitted_run', nonRetryable: true });
    assert.equal(await countRows(stack.pool, 'claims', event.id), 0);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 0);
    assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'pending');

    const replayed = await replayEvent(stack, event.id);
    assert.equal(replayed.status, 'replayed', JSON.stringify(replayed));
    assert.equal(replayed.status === 'replayed' && replayed.after, 'applied');
    const { rows } = await stack.pool.query<{ amount: string }>(
      'SELECT amount FROM ledger_entries WHERE event_id = $1',
      [event.id],
    );
    assert.deepEqual(
      rows.map((row) => Number(row.amount)),
      [12500],
    );
  });
});

describe('events through settle’s door', () => {
  test('a webhook applies once, and its downstream calls are made once', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    const result = await resultOf(event.id);
    assert.equal(result.outcome, 'applied');
    assert.deepEqual(
      result.deliveries.map((d) => [d.target, d.status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
    assert.equal((await postWebhook(stack, event)).status, 200);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
    assert.equal(carrier.requests.filter((r) => r.json.shipment_id === shipmentId).length, 1);
  });

  test('a run of an applied event whose events row is gone still answers the stored outcome', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    assert.equal((await resultOf(event.id)).outcome, 'applied');
    // Its events row dropped while the claim stays (a retention that keeps claims longer than events).
    await stack.pool.query('DELETE FROM events WHERE event_id = $1', [event.id]);

    const handle = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: paymentWorkflowId(event.id),
      args: [{ event }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
    const again = (await handle.result()) as PaymentWorkflowResult;
    assert.equal(again.outcome, 'applied');
    assert.equal(again.claimExisted, true);
    assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
  });

  test('an imported event and a replayed unmatched one apply', async () => {
    const imported = paymentEvent({ shipmentId: await newShipment(), type: 'payment.captured' });
    const dir = mkdtempSync(join(tmpdir(), 'settle-admitted-'));
    writeFileSync(join(dir, 'report.jsonl'), `${JSON.stringify(imported)}\n`);
    const summary = await importReport(stack, join(dir, 'report.jsonl'), { concurrency: 1 });
    assert.equal(summary.counts.accepted, 1, JSON.stringify(summary));
    assert.equal((await resultOf(imported.id)).outcome, 'applied');

    const lateShipment = uniqueId('SHP');
    const unmatched = paymentEvent({ shipmentId: lateShipment, type: 'payment.captured' });
    assert.equal((await postWebhook(stack, unmatched)).status, 202);
    assert.equal((await resultOf(unmatched.id)).outcome, 'unmatched');
    await addShipments(stack.pool, [lateShipment]);
    const replayed = await replayEvent(stack, unmatched.id);
    assert.equal(replayed.status === 'replayed' && replayed.after, 'applied', JSON.stringify(replayed));
    assert.equal((await findShipment(stack.pool, lateShipment))?.paymentStatus, 'captured');
  });

  test('a run that reconciles before its admission commits waits for the commit, then applies (eager start)', async () => {
    const shipmentId = await newShipment();
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    const eager = clientOnWorkerConnection(worker.connection, stack.config);
    const admission = await admitThenStart(stack.pool, {
      insert: async (tx) =>
        (
          await insertAdmittedEvent(tx, {
            eventId: event.id,
            type: event.type,
            payload: event,
            payloadSha256: payloadSha256(event),
            workflowId: paymentWorkflowId(event.id),
            source: 'webhook',
          })
        ).inserted,
      whenKnown: async () => undefined,
      start: async (tx) => {
        const started = await startPaymentWorkflow(eager, stack.taskQueue, event, {
          markKey: await runMarkKey(stack.pool),
          runs: tx,
        });
        // Hold the commit until the run's reconcile is waiting on the event ID's lock: it ran first.
        await waitFor('the reconcile to wait on the admission’s lock', async () => {
          const { rows } = await stack.pool.query(
            `SELECT 1 FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
          );
          if (rows.length > 0) return true;
          const status = (await eager.workflow.getHandle(paymentWorkflowId(event.id)).describe()).status.name;
          assert.equal(status, 'RUNNING', 'the run ended before the admission committed');
          return undefined;
        });
        return started;
      },
    });
    assert.equal(admission.kind, 'started');
    assert.equal(admission.kind === 'started' && admission.started.started, true);
    assert.equal((await resultOf(event.id)).outcome, 'applied');
    assert.equal((await findShipment(stack.pool, shipmentId))?.paymentStatus, 'settled');
  });
});
