/**
 * The payment workflow's branches with stub activities, on the time-skipping test server: what it
 * calls, in which order, and what it returns or fails with. The activities themselves (the claim, the
 * ledger, the downstream calls) are proven against PostgreSQL and real HTTP receivers in test/.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { firstPass } from '../../src/activities/deliver-outbox';
import type { OutboxStatus } from '../../src/domain/outbox';
import type {
  OutboxDeliveryResult,
  OutboxEntry,
  PaymentCompensationResult,
  ReconcileResult,
  UndoDeliveryResult,
} from '../../src/domain/workflow-contracts';
import { ErrorCode } from '../../src/domain/errors';
import { paymentWorkflowId } from '../../src/domain/ids';
import { SETTLE_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { findTemporalTestServer } from '../../src/stack/temporal-binaries';
import { workflowBundlePath } from '../../src/worker-runtime/workflow-bundle';
import type { PaymentWorkflowResult } from '../../src/workflows';

/** What the stubs answer for one run; an answer that throws is that attempt's failure. */
type Scenario = {
  reconcile(call: Call): ReconcileResult;
  deliver?(row: OutboxEntry, call: Call): OutboxDeliveryResult;
  rehold?(call: Call): UndoDeliveryResult;
  compensate?(outbox: OutboxEntry[]): PaymentCompensationResult;
  /** How many deliveries the first pass has time for (all, when unset). */
  firstPassDeliveries?: number;
};
/** One activity call as the stubs saw it; `local` for the fast path's single local attempt. */
type Call = { activity: string; target?: string; local: boolean };

const scenarios = new Map<string, { scenario: Scenario; calls: Call[]; outbox: OutboxEntry[] }>();

/** Each stub finds its run's scenario by workflow ID and records the call before answering. */
function stubActivities(): Partial<Activities> {
  const begin = (activity: string, outboxId?: number) => {
    const { workflowExecution, isLocal } = Context.current().info;
    const run = scenarios.get(workflowExecution?.workflowId ?? '');
    assert.ok(run, `no scenario for ${workflowExecution?.workflowId}`);
    const row = run.outbox.find((entry) => entry.outboxId === outboxId);
    const call: Call = { activity, local: isLocal, ...(row ? { target: row.target } : {}) };
    run.calls.push(call);
    return { ...run, call, row };
  };
  const steps = {
    async reconcilePayment() {
      const { scenario, call } = begin('reconcilePayment');
      return scenario.reconcile(call);
    },
    async deliverOutboxRow({ outboxId }: { outboxId: number }) {
      const { scenario, call, row } = begin('deliverOutboxRow', outboxId);
      return scenario.deliver ? scenario.deliver(row!, call) : deliveredAs(row!, 'delivered');
    },
  };
  return {
    ...steps,
    // The real first pass over the stub steps; each step records itself as a call of the pass.
    async reconcileAndDeliver(event) {
      const run = scenarios.get(Context.current().info.workflowExecution!.workflowId)!;
      let timeFor = run.scenario.firstPassDeliveries ?? Infinity;
      return firstPass(event, {
        reconcile: () => steps.reconcilePayment(),
        deliver: (input) => steps.deliverOutboxRow(input),
        hasTimeFor: () => timeFor-- > 0,
      });
    },
    async reholdShipment({ outboxId }) {
      const { scenario, call } = begin('reholdShipment', outboxId);
      return scenario.rehold ? scenario.rehold(call) : { status: 'reheld' };
    },
    async compensatePaymentEffects() {
      const { scenario, outbox } = begin('compensatePaymentEffects');
      return scenario.compensate ? scenario.compensate(outbox) : compensated(outbox);
    },
  };
}

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;
const taskQueue = `settle-unit-saga-${randomUUID()}`;

before(async () => {
  // The workflow's own warnings (a refusal, a failed compensation) are what these tests provoke.
  Runtime.install({
    logger: new DefaultLogger('ERROR', () => {}),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
  });
  const path = process.env.SETTLE_TEMPORAL_TEST_SERVER ?? (await findTemporalTestServer());
  const [environment, codePath] = await Promise.all([
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } }),
    workflowBundlePath(),
  ]);
  env = environment;
  // The operator view upserts SettleOutcome and SettleDeliveryState, as on the dev server.
  await env.connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(
      SETTLE_SEARCH_ATTRIBUTES.map((key) => [
        key.name,
        temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      ]),
    ),
  });
  worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath },
    activities: stubActivities(),
  });
  running = worker.run();
});

after(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
});

const CARRIER: OutboxEntry = {
  outboxId: 1,
  target: 'carrier',
  action: 'release_hold',
  idempotencyKey: 'k:carrier:release_hold',
  status: 'pending',
};
const ERP: OutboxEntry = {
  outboxId: 2,
  target: 'erp',
  action: 'post_ledger_entry',
  idempotencyKey: 'k:erp:post_ledger_entry',
  status: 'pending',
};

function reconciled(outbox: OutboxEntry[], overrides: Partial<ReconcileResult> = {}): ReconcileResult {
  return {
    outcome: 'applied',
    claimExisted: false,
    shipmentId: 'SHP-4821',
    paymentStatus: 'settled',
    outbox,
    ...overrides,
  };
}

function deliveredAs(row: OutboxEntry, status: OutboxStatus): OutboxDeliveryResult {
  return { outboxId: row.outboxId, target: row.target, action: row.action, status };
}

/** What compensatePaymentEffects reports: a delivered release compensated, every other row failed. */
function compensated(outbox: OutboxEntry[]): PaymentCompensationResult {
  return {
    reversals: 1,
    abandoned: 0,
    outbox: outbox.map((row) => ({ ...row, status: row.target === 'carrier' ? 'compensated' : 'failed' })),
  };
}

const refused = (target: string) =>
  ApplicationFailure.nonRetryable(`the ${target} answered 422`, ErrorCode.DownstreamRejected);

/** Starts the payment workflow for a fresh event against `scenario`; resolves with its result or failure. */
async function runPayment(scenario: Scenario, outbox: OutboxEntry[] = [CARRIER, ERP], input?: unknown) {
  const event: PaymentEvent = {
    id: `evt_${randomUUID()}`,
    type: 'payment.settled',
    created_at: '2026-08-10T02:14:00Z',
    data: { shipment_id: 'SHP-4821', payment_id: 'pi_1', amount: 12500, currency: 'EUR' },
  };
  const workflowId = paymentWorkflowId(event.id);
  const run = { scenario, calls: [] as Call[], outbox };
  scenarios.set(workflowId, run);
  const handle = await env.client.workflow.start('paymentWorkflow', {
    taskQueue,
    workflowId,
    args: [input ?? { event }],
  });
  const settled = await handle.result().then(
    (result: PaymentWorkflowResult) => ({ result, failure: undefined }),
    (failure: unknown) => ({ result: undefined, failure }),
  );
  /** The calls without the local/durable distinction: "what was done, in order". */
  const steps = run.calls.map(({ activity, target }) => (target ? `${activity} ${target}` : activity));
  /** The same, each with the path it took: `deliverOutboxRow carrier local`. */
  const paths = run.calls.map((call, i) => `${steps[i]} ${call.local ? 'local' : 'durable'}`);
  return { ...settled, calls: run.calls, steps, paths, handle };
}

/** The activity types of the run's local-activity markers, in order. */
async function localActivityTypes(handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }) {
  const { events } = await handle.fetchHistory();
  return events!.flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = marker.details!.data!.payloads![0]!.data!;
    return [(JSON.parse(Buffer.from(data).toString()) as { activity_type: string }).activity_type];
  });
}

/** WorkflowFailedError → ActivityFailure (of `activity`) → ApplicationFailure of type `type`. */
function assertFailedBy(failure: unknown, activity: string, type: string): void {
  assert.ok(failure instanceof WorkflowFailedError, `expected a failed workflow, got ${String(failure)}`);
  assert.ok(failure.cause instanceof ActivityFailure, 'the failure names the activity');
  assert.equal(failure.cause.activityType, activity);
  assert.ok(failure.cause.cause instanceof ApplicationFailure);
  assert.equal(failure.cause.cause.type, type);
}

describe('the payment workflow with stub activities', () => {
  test('applied: reconciled once, then the carrier release and the ERP entry, in that order; nothing compensated', async () => {
    const { result, failure, steps } = await runPayment({ reconcile: () => reconciled([CARRIER, ERP]) });
    assert.equal(failure, undefined);
    assert.deepEqual(steps, ['reconcilePayment', 'deliverOutboxRow carrier', 'deliverOutboxRow erp']);
    assert.equal(result!.outcome, 'applied');
    assert.equal(result!.compensated, false);
    assert.deepEqual(
      result!.deliveries.map(({ target, status }) => [target, status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
    assert.deepEqual(
      result!.outbox.map(({ target, status }) => [target, status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
  });

  for (const outcome of ['stale', 'unmatched'] as const) {
    test(`${outcome}: the run ends after reconcile, nothing delivered`, async () => {
      const { result, steps } = await runPayment({ reconcile: () => reconciled([], { outcome }) });
      assert.deepEqual(steps, ['reconcilePayment']);
      assert.equal(result!.outcome, outcome);
      assert.deepEqual(result!.deliveries, []);
      assert.equal(result!.compensated, false);
    });
  }

  test('duplicate claim, effects already delivered: the stored outcome is returned and nothing is sent again', async () => {
    const delivered = [CARRIER, ERP].map((row) => ({ ...row, status: 'delivered' as const }));
    const { result, steps } = await runPayment({
      reconcile: () => reconciled(delivered, { claimExisted: true }),
    });
    assert.deepEqual(steps, ['reconcilePayment']);
    assert.equal(result!.claimExisted, true);
    assert.equal(result!.outcome, 'applied');
    assert.deepEqual(result!.deliveries, []);
  });

  test('duplicate claim, an earlier run stopped after the release: only the ERP entry is sent', async () => {
    const { result, steps } = await runPayment({
      reconcile: () => reconciled([{ ...CARRIER, status: 'delivered' }, ERP], { claimExisted: true }),
    });
    assert.deepEqual(steps, ['reconcilePayment', 'deliverOutboxRow erp']);
    assert.deepEqual(
      result!.outbox.map(({ target, status }) => [target, status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
  });

  test('the ERP refuses: the release is re-held, then the ledger compensated (newest first); outcome needs_review', async () => {
    const { result, failure, steps } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      deliver: (row) => {
        if (row.target === 'erp') throw refused('erp');
        return deliveredAs(row, 'delivered');
      },
    });
    assert.equal(failure, undefined);
    // A refusal is not retried: the durable attempt after the local one only records it.
    assert.deepEqual(steps, [
      'reconcilePayment',
      'deliverOutboxRow carrier',
      'deliverOutboxRow erp',
      'deliverOutboxRow erp',
      'reholdShipment carrier',
      'compensatePaymentEffects',
    ]);
    assert.equal(result!.outcome, 'needs_review');
    assert.equal(result!.compensated, true);
    const finalStates = [
      ['carrier', 'compensated'],
      ['erp', 'failed'],
    ];
    assert.deepEqual(
      result!.deliveries.map(({ target, status }) => [target, status]),
      finalStates,
    );
    assert.deepEqual(
      result!.outbox.map(({ target, status }) => [target, status]),
      finalStates,
    );
  });

  test('the carrier refuses the release: its re-hold (registered before the step) and the ledger compensation run; the ERP is never called', async () => {
    const { result, steps } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      deliver: (row) => {
        throw refused(row.target);
      },
      rehold: () => ({ status: 'never_sent' }),
    });
    assert.deepEqual(steps, [
      'reconcilePayment',
      'deliverOutboxRow carrier',
      'deliverOutboxRow carrier',
      'reholdShipment carrier',
      'compensatePaymentEffects',
    ]);
    assert.equal(result!.outcome, 'needs_review');
    assert.deepEqual(
      result!.deliveries.map(({ target, status }) => [target, status]),
      [['carrier', 'compensated']],
    );
  });

  test('a compensation that fails does not stop the next one; the run then fails with the first failure', async () => {
    const { failure, steps } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      deliver: (row) => {
        if (row.target === 'erp') throw refused('erp');
        return deliveredAs(row, 'delivered');
      },
      rehold: () => {
        throw ApplicationFailure.nonRetryable(
          'the carrier refused the re-hold',
          ErrorCode.DownstreamRejected,
        );
      },
    });
    assert.deepEqual(steps.slice(-2), ['reholdShipment carrier', 'compensatePaymentEffects']);
    assertFailedBy(failure, 'reholdShipment', ErrorCode.DownstreamRejected);
  });

  test('the same event ID with another payload: the run fails with idempotency_key_reused and delivers nothing', async () => {
    const { failure, steps } = await runPayment({
      reconcile: () => {
        throw ApplicationFailure.nonRetryable('payload differs', ErrorCode.IdempotencyKeyReused);
      },
    });
    assert.deepEqual(steps, ['reconcilePayment', 'reconcilePayment']);
    assertFailedBy(failure, 'reconcilePayment', ErrorCode.IdempotencyKeyReused);
  });

  test('a throttled first attempt: the durable activity takes over after exactly the Retry-After delay', async () => {
    const { result, calls, handle } = await runPayment({
      reconcile: () => reconciled([CARRIER]),
      deliver: (row, call) => {
        if (call.local) {
          throw ApplicationFailure.retryable('the carrier answered 429', ErrorCode.DownstreamThrottled, {
            retryAfterMs: 90_000,
          });
        }
        return deliveredAs(row, 'delivered');
      },
    });
    assert.deepEqual(
      calls.filter(({ activity }) => activity === 'deliverOutboxRow').map(({ local }) => local),
      [true, false],
    );
    assert.equal(result!.outcome, 'applied');
    assert.deepEqual(
      result!.deliveries.map(({ status }) => status),
      ['delivered'],
    );
    const timers = (await handle.fetchHistory()).events!.flatMap(
      (event) => event.timerStartedEventAttributes ?? [],
    );
    assert.deepEqual(
      timers.map((timer) => Number(timer.startToFireTimeout?.seconds)),
      [90],
    );
  });

  test('a delivery whose target has no URL is parked as not_configured, not compensated', async () => {
    const { result, steps } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      deliver: (row) => deliveredAs(row, row.target === 'erp' ? 'not_configured' : 'delivered'),
    });
    assert.deepEqual(steps, ['reconcilePayment', 'deliverOutboxRow carrier', 'deliverOutboxRow erp']);
    assert.equal(result!.compensated, false);
    assert.deepEqual(
      result!.deliveries.map(({ target, status }) => [target, status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'not_configured'],
      ],
    );
  });

  test('the happy path is one first pass: one local activity, no activity task, every step local', async () => {
    const { result, calls, handle } = await runPayment({ reconcile: () => reconciled([CARRIER, ERP]) });
    assert.equal(result!.outcome, 'applied');
    assert.ok(calls.every(({ local }) => local));
    assert.deepEqual(await localActivityTypes(handle), ['reconcileAndDeliver']);
    const events = (await handle.fetchHistory()).events!;
    assert.equal(events.filter((event) => event.activityTaskScheduledEventAttributes).length, 0);
  });

  test('a first pass out of time for a row leaves it, and the rows after it, to the step-by-step path', async () => {
    const { result, steps, handle } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      firstPassDeliveries: 1,
    });
    assert.deepEqual(steps, ['reconcilePayment', 'deliverOutboxRow carrier', 'deliverOutboxRow erp']);
    assert.deepEqual(await localActivityTypes(handle), ['reconcileAndDeliver', 'deliverOutboxRow']);
    assert.deepEqual(
      result!.deliveries.map(({ target, status }) => [target, status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
  });

  test('a first pass whose reconcile fails: the durable reconcile, then each row step by step', async () => {
    const { result, paths } = await runPayment({
      reconcile: (call) => {
        if (call.local)
          throw ApplicationFailure.retryable('PostgreSQL is down', ErrorCode.DatabaseUnavailable);
        return reconciled([CARRIER, ERP]);
      },
    });
    assert.equal(result!.outcome, 'applied');
    assert.deepEqual(paths, [
      'reconcilePayment local',
      'reconcilePayment durable',
      'deliverOutboxRow carrier local',
      'deliverOutboxRow erp local',
    ]);
  });

  test('a first pass whose carrier call fails: the ERP is not called in it; both rows then go on in order', async () => {
    const { result, paths } = await runPayment({
      reconcile: () => reconciled([CARRIER, ERP]),
      deliver: (row, call) => {
        if (row.target === 'carrier' && call.local) {
          throw ApplicationFailure.retryable('the carrier answered 503', ErrorCode.DownstreamUnavailable);
        }
        return deliveredAs(row, 'delivered');
      },
    });
    assert.equal(result!.outcome, 'applied');
    assert.deepEqual(paths, [
      'reconcilePayment local',
      'deliverOutboxRow carrier local',
      'deliverOutboxRow carrier durable',
      'deliverOutboxRow erp local',
    ]);
  });

  test('input that is not a payment event fails the run with invalid_workflow_input before any activity', async () => {
    const { failure, steps } = await runPayment({ reconcile: () => reconciled([]) }, [], {
      event: { id: 'evt 1', type: 'payment.settled' },
    });
    assert.deepEqual(steps, []);
    assert.ok(failure instanceof WorkflowFailedError);
    assert.ok(failure.cause instanceof ApplicationFailure);
    assert.equal(failure.cause.type, ErrorCode.InvalidWorkflowInput);
  });
});
