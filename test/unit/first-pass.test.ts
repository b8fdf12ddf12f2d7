/**
 * The first pass (src/activities/deliver-outbox.ts) over stub steps: which rows it attempts, in
 * which order, where it stops, and how much of its own time it keeps for a call it starts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DELIVERY_MARGIN_MS, firstPass, reconcileAndDeliver } from '../../src/activities/deliver-outbox';
import type { StartedOutboxRow } from '../../src/db/outbox';
import { ErrorCode } from '../../src/domain/errors';
import type { PaymentEvent } from '../../src/domain/payment-event';
import type {
  OutboxEntry,
  OutboxInput,
  ReconcileAndDeliverResult,
  ReconcileResult,
} from '../../src/domain/workflow-contracts';

const EVENT: PaymentEvent = {
  id: 'evt_first_pass',
  type: 'payment.captured',
  created_at: '2026-08-10T02:14:00Z',
  data: { shipment_id: 'SHP-1', payment_id: 'pi_1', amount: 12500, currency: 'EUR' },
};
const row = (outboxId: number, target: OutboxEntry['target'], status: OutboxEntry['status'] = 'pending') => ({
  outboxId,
  target,
  action: target === 'carrier' ? 'release_hold' : 'post_ledger_entry',
  idempotencyKey: `k:${outboxId}`,
  status,
});
const applied = (
  outbox: OutboxEntry[],
  outcome: ReconcileResult['outcome'] = 'applied',
): ReconcileResult => ({
  outcome,
  claimExisted: false,
  shipmentId: 'SHP-1',
  paymentStatus: 'captured',
  outbox,
});

/** Stub steps that record each call; `deliver` answers per outbox ID. */
function steps(
  reconciled: ReconcileResult,
  deliver: (input: OutboxInput) => 'delivered' | Error = () => 'delivered',
) {
  const calls: string[] = [];
  /** How the activity called each delivery: the row it had started already, and the next it asked to start. */
  const chained: string[] = [];
  const deliverOutboxRow = async (input: OutboxInput) => {
    calls.push(`deliver ${input.outboxId}`);
    const answer = deliver(input);
    if (answer instanceof Error) throw answer;
    const entry = reconciled.outbox.find((candidate) => candidate.outboxId === input.outboxId)!;
    return { outboxId: entry.outboxId, target: entry.target, action: entry.action, status: answer };
  };
  return {
    calls,
    chained,
    reconcilePayment: async () => {
      calls.push('reconcile');
      return reconciled;
    },
    /** The reconcile that stores the first row with its attempt counted, as the database step does. */
    reconcilePaymentThenStart: async () => {
      calls.push('reconcile');
      const first = reconciled.outbox[0];
      return {
        result: reconciled,
        ...(first ? { started: { outboxId: first.outboxId } as StartedOutboxRow } : {}),
      };
    },
    releaseOutboxAttempt: async (outboxId: number) => {
      calls.push(`release ${outboxId}`);
    },
    deliverOutboxRow,
    /** deliverOutboxRow that starts `next` when this row delivered, as the database step does. */
    deliverOutboxRowThenStart: async (input: OutboxInput, started?: StartedOutboxRow, next?: OutboxInput) => {
      chained.push(`${input.outboxId}: started ${started?.outboxId ?? '-'}, next ${next?.outboxId ?? '-'}`);
      const result = await deliverOutboxRow(input);
      const nextStarted = next && ({ outboxId: next.outboxId } as StartedOutboxRow);
      return { result, ...(result.status === 'delivered' ? { nextStarted } : {}) };
    },
  };
}

/** The first pass over a stub's steps, with time for every call. */
const passOver = (stub: ReturnType<typeof steps>) =>
  firstPass(EVENT, {
    reconcile: stub.reconcilePayment,
    deliver: stub.deliverOutboxRow,
    hasTimeFor: () => true,
  });

describe('the first pass', () => {
  test('reconciles, then delivers every pending row in order', async () => {
    const stub = steps(applied([row(1, 'carrier'), row(2, 'erp')]));
    const result = await passOver(stub);
    assert.deepEqual(stub.calls, ['reconcile', 'deliver 1', 'deliver 2']);
    assert.deepEqual(
      result.attempts.map((attempt) => ('delivered' in attempt ? attempt.delivered.status : 'failed')),
      ['delivered', 'delivered'],
    );
  });

  test('skips rows already delivered, and delivers nothing for an outcome other than applied', async () => {
    const partly = steps(applied([row(1, 'carrier', 'delivered'), row(2, 'erp')]));
    await passOver(partly);
    assert.deepEqual(partly.calls, ['reconcile', 'deliver 2']);
    const stale = steps(applied([row(1, 'carrier')], 'stale'));
    const result = await passOver(stale);
    assert.deepEqual(stale.calls, ['reconcile']);
    assert.deepEqual(result.attempts, []);
  });

  test('stops at the first failed call: the next target is not called, the failure carries its Retry-After', async () => {
    const throttled = ApplicationFailure.retryable(
      'HTTP 429, retry after 2000 ms',
      ErrorCode.DownstreamThrottled,
      {
        retryAfterMs: 2_000,
      },
    );
    const stub = steps(applied([row(1, 'carrier'), row(2, 'erp')]), ({ outboxId }) =>
      outboxId === 1 ? throttled : 'delivered',
    );
    const result = await passOver(stub);
    assert.deepEqual(stub.calls, ['reconcile', 'deliver 1']);
    assert.deepEqual(result.attempts, [
      {
        outboxId: 1,
        failure: {
          type: ErrorCode.DownstreamThrottled,
          message: 'HTTP 429, retry after 2000 ms',
          nonRetryable: false,
          retryAfterMs: 2_000,
        },
      },
    ]);
  });

  test('a refusal is returned as non-retryable; an error of another kind as retryable, without a type', async () => {
    const refused = ApplicationFailure.nonRetryable('HTTP 422', ErrorCode.DownstreamRejected);
    const stub = steps(applied([row(1, 'carrier')]), () => refused);
    const result = await passOver(stub);
    assert.deepEqual(result.attempts[0], {
      outboxId: 1,
      failure: {
        type: ErrorCode.DownstreamRejected,
        message: 'HTTP 422',
        nonRetryable: true,
        retryAfterMs: null,
      },
    });
    const broken = steps(applied([row(1, 'carrier')]), () => new Error('connection terminated'));
    const again = await passOver(broken);
    assert.deepEqual(again.attempts[0], {
      outboxId: 1,
      failure: { type: null, message: 'connection terminated', nonRetryable: false, retryAfterMs: null },
    });
  });

  test('a reconcile that throws fails the pass, before any call', async () => {
    const stub = steps(applied([row(1, 'carrier')]));
    const conflict = ApplicationFailure.nonRetryable('payload differs', ErrorCode.IdempotencyKeyReused);
    await assert.rejects(
      firstPass(EVENT, {
        reconcile: async () => {
          throw conflict;
        },
        deliver: stub.deliverOutboxRow,
        hasTimeFor: () => true,
      }),
      (error) => error === conflict,
    );
    assert.deepEqual(stub.calls, []);
  });
});

describe('reconcileAndDeliver, the activity', () => {
  const requestTimeoutMs = 15_000;
  const run = (startToCloseTimeoutMs: number, deliver?: Parameters<typeof steps>[1]) => {
    const stub = steps(applied([row(1, 'carrier'), row(2, 'erp')]), deliver);
    const mock = new MockActivityEnvironment({ startToCloseTimeoutMs, isLocal: true });
    return mock.run(reconcileAndDeliver, stub, requestTimeoutMs, EVENT).then((result) => ({
      result: result as ReconcileAndDeliverResult,
      calls: stub.calls,
      chained: stub.chained,
    }));
  };

  test('starts a call only while the request timeout and the margin still fit in its own time', async () => {
    const roomy = await run(60_000);
    assert.deepEqual(roomy.calls, ['reconcile', 'deliver 1', 'deliver 2']);
    // The first row's attempt is started by the reconcile, the second's with the first one's
    // `delivered`; each is sent as started.
    assert.deepEqual(roomy.chained, ['1: started 1, next 2', '2: started 2, next -']);
    // One millisecond short of one request and the margin: the rows are left to the durable path, and
    // the attempt the reconcile counted is taken back.
    const tight = await run(requestTimeoutMs + DELIVERY_MARGIN_MS - 1);
    assert.deepEqual(tight.calls, ['reconcile', 'release 1']);
    assert.equal(tight.result.reconciled.outcome, 'applied');
    assert.deepEqual(tight.result.attempts, []);
  });

  test('a row that did not deliver starts no attempt of the next: the durable path counts its own', async () => {
    const refused = await run(60_000, (input) =>
      input.outboxId === 1 ? ApplicationFailure.retryable('HTTP 503', 'downstream_unavailable') : 'delivered',
    );
    assert.deepEqual(refused.calls, ['reconcile', 'deliver 1']);
    assert.deepEqual(refused.chained, ['1: started 1, next 2']);
    assert.equal(refused.result.attempts.length, 1);
  });
});
