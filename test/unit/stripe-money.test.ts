/**
 * Stripe's amounts in Stripe's units (docs/providers.md, "Money units"; docs.stripe.com/currencies),
 * converted to ISO 4217 minor units at each documented special case. Expected figures are written
 * by hand from Stripe's documentation and ISO 4217, so they hold on any Node's ICU data.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isoMinorDigits } from '../../src/domain/money';
import { adaptStripeEvent } from '../../src/providers/stripe/adapter';
import type { AdaptedEvent } from '../../src/providers/types';
import { adaptedAmount as amountOf } from '../support/providers';

function stripeCapture(amount: unknown, currency: string): AdaptedEvent {
  return adaptStripeEvent({
    id: 'evt_1Money',
    type: 'payment_intent.succeeded',
    created: 1_786_000_000,
    livemode: false,
    data: {
      object: {
        id: 'pi_1Money',
        object: 'payment_intent',
        amount,
        amount_received: amount,
        currency,
        metadata: { shipment_id: 'SHP-1' },
      },
    },
  });
}

describe("Stripe's units (docs.stripe.com/currencies)", () => {
  // Stripe's zero-decimal list and three-decimal list; every other currency is two-decimal.
  const ZERO = [
    'BIF',
    'CLP',
    'DJF',
    'GNF',
    'JPY',
    'KMF',
    'KRW',
    'MGA',
    'PYG',
    'RWF',
    'UGX',
    'VND',
    'VUV',
    'XAF',
    'XOF',
    'XPF',
  ];
  const THREE = ['BHD', 'JOD', 'KWD', 'OMR', 'TND'];

  test('a zero-decimal currency counts whole units, whatever ISO gives it', () => {
    for (const code of ZERO) {
      const digits = isoMinorDigits(code)!;
      assert.deepEqual(
        amountOf(stripeCapture(700, code.toLowerCase())),
        { amount: 700 * 10 ** digits, currency: code },
        code,
      );
    }
    // MGA: zero-decimal at Stripe, two decimals in ISO.
    assert.deepEqual(amountOf(stripeCapture(1000, 'mga')), { amount: 100000, currency: 'MGA' });
  });

  test('a three-decimal currency counts thousandths', () => {
    for (const code of THREE) {
      assert.deepEqual(
        amountOf(stripeCapture(5120, code.toLowerCase())),
        { amount: 5120, currency: code },
        code,
      );
    }
  });

  test('special cases: ISK, HUF and TWD stay two-decimal in the API', () => {
    assert.deepEqual(amountOf(stripeCapture(100000, 'isk')), { amount: 1000, currency: 'ISK' });
    assert.deepEqual(amountOf(stripeCapture(500000, 'huf')), { amount: 500000, currency: 'HUF' });
    assert.deepEqual(amountOf(stripeCapture(42000, 'huf')), { amount: 42000, currency: 'HUF' });
    assert.deepEqual(amountOf(stripeCapture(10000, 'twd')), { amount: 10000, currency: 'TWD' });
  });

  test('every other currency is two-decimal, ISO giving it 2, 3 or 4', () => {
    assert.deepEqual(amountOf(stripeCapture(12500, 'eur')), { amount: 12500, currency: 'EUR' });
    assert.deepEqual(amountOf(stripeCapture(1000, 'iqd')), { amount: 10000, currency: 'IQD' });
    assert.deepEqual(amountOf(stripeCapture(1, 'clf')), { amount: 100, currency: 'CLF' });
  });

  test('fractional krónur cannot be ISO minor units: kept as stated, never rounded', () => {
    assert.deepEqual(amountOf(stripeCapture(100050, 'isk')), {
      amount: 100050,
      currency: 'ISK',
      amount_decimals: 2,
    });
  });

  test('a code ISO does not list is refused at its field; an amount that is no count, at the amount', () => {
    assert.equal(amountOf(stripeCapture(100, 'xyz')), 'invalid data.object.currency');
    assert.equal(amountOf(stripeCapture(12.5, 'eur')), 'invalid data.amount');
    assert.equal(amountOf(stripeCapture(-1, 'eur')), 'invalid data.amount');
  });
});

describe("Stripe's refunds are converted the same way", () => {
  const refund = (amount: number) => ({
    id: 're_1Money',
    object: 'refund',
    amount,
    currency: 'isk',
    status: 'succeeded',
    payment_intent: 'pi_1Money',
    metadata: { shipment_id: 'SHP-1' },
  });

  test('refund.created and charge.refunded of 500 krónur are ISK 500', () => {
    const created = adaptStripeEvent({
      id: 'evt_1Refund',
      type: 'refund.created',
      created: 1_786_000_000,
      data: { object: refund(50000) },
    });
    assert.deepEqual(amountOf(created), { amount: 500, currency: 'ISK' });
    const charge = adaptStripeEvent({
      id: 'evt_1Charge',
      type: 'charge.refunded',
      created: 1_786_000_000,
      data: {
        object: {
          id: 'ch_1Money',
          object: 'charge',
          currency: 'isk',
          payment_intent: 'pi_1Money',
          metadata: { shipment_id: 'SHP-1' },
          refunds: { data: [refund(50000)] },
        },
      },
    });
    assert.deepEqual(amountOf(charge), { amount: 500, currency: 'ISK' });
  });

  test('a refund of 0.50 krónur is kept as stated', () => {
    const created = adaptStripeEvent({
      id: 'evt_1Refund',
      type: 'refund.created',
      created: 1_786_000_000,
      data: { object: refund(50) },
    });
    assert.deepEqual(amountOf(created), { amount: 50, currency: 'ISK', amount_decimals: 2 });
  });
});
