import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PAYMENT_EVENT_TYPES, type PaymentEventType } from '../../src/domain/payment-event';
import {
  capturesMoney,
  decideTransition,
  PAYMENT_STATUSES,
  type PaymentStatus,
} from '../../src/domain/payment-rules';

/**
 * SPEC.md, "What a payment event does": the status only moves forward along
 * pending → authorized → captured → settled → refunded (an event may skip steps); `failed` only from
 * pending or authorized; nothing leaves `failed`; every refund event is its own refund, so a refund of
 * a refunded payment applies again. Written out by hand: one row per current status, one column per
 * event type in the order of COLUMNS; `A` advances to the event's status, `S` is stale.
 */
const COLUMNS = ['authorized', 'captured', 'settled', 'refunded', 'failed'] as const;
const A = 'advance';
const S = 'stale';
type Expected = typeof A | typeof S;
const EXPECTED: Record<PaymentStatus, Expected[]> = {
  pending: [A, A, A, A, A],
  authorized: [S, A, A, A, A],
  captured: [S, S, A, A, S],
  settled: [S, S, S, A, S],
  refunded: [S, S, S, A, S],
  failed: [S, S, S, S, S],
};

describe('decideTransition: every status × event pair, against SPEC.md', () => {
  test('the table covers exactly the statuses and the handled event types', () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...PAYMENT_STATUSES].sort());
    for (const row of Object.values(EXPECTED)) assert.equal(row.length, COLUMNS.length);
    assert.deepEqual(
      COLUMNS.map((status) => `payment.${status}`),
      [...PAYMENT_EVENT_TYPES],
    );
  });

  for (const current of PAYMENT_STATUSES) {
    COLUMNS.forEach((status, column) => {
      const type = `payment.${status}` as PaymentEventType;
      const expected = EXPECTED[current][column];
      test(`${current} + ${type} → ${expected === 'advance' ? status : 'stale'}`, () => {
        assert.deepEqual(
          decideTransition(current, type),
          expected === 'advance' ? { kind: 'advance', from: current, to: status } : { kind: 'stale' },
        );
      });
    });
  }

  test('money is captured by captured or settled only, never by a refund or a failure', () => {
    assert.deepEqual(
      PAYMENT_STATUSES.filter((status) => capturesMoney(status)),
      ['captured', 'settled'],
    );
  });
});
