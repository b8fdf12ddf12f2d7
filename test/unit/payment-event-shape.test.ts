import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { paymentEventSchema } from '../../src/domain/payment-event';
import { isPaymentEvent, RFC3339_PATTERN } from '../../src/domain/payment-event-shape';
import { deliveryIdSchema } from '../../src/domain/reminder';
import { isEventId } from '../../src/domain/payment-event-shape';

/**
 * The workflow checks its input in plain code (no zod in the workflow bundle). It must accept
 * exactly what the gateway's schema accepts: a run the gateway started must never fail its own
 * check, and input the schema refuses must never reach reconcile.
 */
const text = (maxLength: number) =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.stringMatching(/^[A-Za-z0-9_.:-]{0,210}$/),
    fc.constantFrom('', ' ', 'a'.repeat(200), 'a'.repeat(201), 'évt', 'x\u0000y'),
  );
const anyValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.string(),
  fc.array(fc.integer()),
  fc.dictionary(fc.string(), fc.integer()),
);
const timestamp = fc.oneof(
  fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  fc.date({ noInvalidDate: true }).map((date) => date.toISOString().replace('Z', '+05:30')),
  fc.constantFrom(
    '2026-11-30T12:00:00Z',
    '2026-11-30T12:00:00.123456789-23:59',
    '2024-02-29T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-11-30T12:00Z',
    '2026-11-30T24:00:00Z',
    '2026-11-30 12:00:00Z',
    '2026-11-30T12:00:00',
    '2026-11-30T12:00:00+24:00',
    '2026-04-31T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '2026-11-30t12:00:00z',
  ),
  fc.string(),
);
const amount = fc.oneof(
  fc.integer({ min: -5, max: 1_000_000 }),
  fc.constantFrom(
    0,
    -0,
    -1,
    1.5,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 1,
    NaN,
    Infinity,
    -Infinity,
    1e300,
  ),
  fc.double(),
  fc.string(),
);
/** Mostly a valid value, sometimes one of the same kind that may not be, sometimes another kind. */
const field = <T, U>(valid: fc.Arbitrary<T>, edge: fc.Arbitrary<U>) =>
  fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: edge },
    { weight: 1, arbitrary: anyValue },
  );
const validText = fc.stringMatching(/^[A-Za-z0-9_.:-]{1,200}$/);
const validTimestamp = fc
  .date({ min: new Date(0), max: new Date('2100-01-01'), noInvalidDate: true })
  .map((date) => date.toISOString());
const data = fc.record(
  {
    shipment_id: field(fc.string({ minLength: 1, maxLength: 200 }), text(210)),
    payment_id: field(fc.string({ minLength: 1, maxLength: 200 }), text(210)),
    amount: field(fc.integer({ min: 0 }), amount),
    currency: field(
      fc.constantFrom('EUR', 'USD', 'JPY'),
      fc.oneof(fc.constantFrom('eur', 'EU', 'EURO', 'ÉUR'), fc.string({ maxLength: 4 })),
    ),
    extra: anyValue,
  },
  { requiredKeys: ['shipment_id', 'payment_id', 'amount', 'currency'] },
);
const event = fc.record(
  {
    id: field(validText, text(210)),
    type: field(
      fc.constantFrom(
        'payment.authorized',
        'payment.captured',
        'payment.settled',
        'payment.refunded',
        'payment.failed',
      ),
      fc.constantFrom('payment.disputed', 'Payment.settled', ''),
    ),
    created_at: field(validTimestamp, timestamp),
    data: fc.oneof({ weight: 6, arbitrary: data }, { weight: 1, arbitrary: anyValue }),
    livemode: anyValue,
  },
  { requiredKeys: ['id', 'type', 'created_at', 'data'] },
);

describe('the workflow input check (domain/payment-event-shape.ts)', () => {
  test('accepts exactly what paymentEventSchema accepts', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 9, arbitrary: event }, { weight: 1, arbitrary: anyValue }), (value) => {
        const expected = paymentEventSchema.safeParse(value).success;
        if (expected) accepted += 1;
        assert.equal(isPaymentEvent(value), expected, JSON.stringify(value));
      }),
      { numRuns: 20_000 },
    );
    // The generator must reach both answers, or the comparison proves nothing.
    assert.ok(accepted > 200, `only ${accepted} generated events were valid`);
  });

  test('its timestamp pattern agrees with zod on every timestamp form', () => {
    fc.assert(
      fc.property(timestamp, (value) => {
        const expected = paymentEventSchema.shape.created_at.safeParse(value).success;
        assert.equal(RFC3339_PATTERN.test(value), expected, value);
      }),
      { numRuns: 5_000 },
    );
  });

  test('a reminder run checks its delivery ID as deliveryIdSchema does', () => {
    fc.assert(
      fc.property(fc.oneof(text(210), anyValue), (value) => {
        assert.equal(isEventId(value), deliveryIdSchema.safeParse(value).success, JSON.stringify(value));
      }),
      { numRuns: 5_000 },
    );
  });
});
