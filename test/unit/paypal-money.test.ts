/**
 * PayPal's amounts, decimal text of major units (docs/providers.md, "Money units";
 * developer.paypal.com/api/rest/reference/currency-codes), converted to ISO 4217 minor units, its
 * no-decimal currencies included. Expected figures are written by hand from PayPal's list and ISO 4217.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adaptPaypalEvent } from '../../src/providers/paypal/adapter';
import type { AdaptedEvent } from '../../src/providers/types';
import { adaptedAmount as amountOf } from '../support/providers';

function paypalCapture(value: unknown, currency: unknown): AdaptedEvent {
  return adaptPaypalEvent({
    id: 'WH-1MONEY',
    event_type: 'PAYMENT.CAPTURE.COMPLETED',
    create_time: '2026-08-10T02:14:00Z',
    resource: { id: 'CAP1', amount: { currency_code: currency, value }, custom_id: 'SHP-1' },
  });
}

describe("PayPal's units (developer.paypal.com/api/rest/reference/currency-codes)", () => {
  test('its no-decimal currencies (HUF, JPY, TWD) in whole units, converted to ISO', () => {
    assert.deepEqual(amountOf(paypalCapture('100', 'TWD')), { amount: 10000, currency: 'TWD' });
    assert.deepEqual(amountOf(paypalCapture('5000', 'HUF')), { amount: 500000, currency: 'HUF' });
    assert.deepEqual(amountOf(paypalCapture('500', 'JPY')), { amount: 500, currency: 'JPY' });
  });

  test('every other currency as decimal text of major units', () => {
    assert.deepEqual(amountOf(paypalCapture('42.50', 'EUR')), { amount: 4250, currency: 'EUR' });
    assert.deepEqual(amountOf(paypalCapture('42', 'EUR')), { amount: 4200, currency: 'EUR' });
    assert.deepEqual(amountOf(paypalCapture('1.234', 'KWD')), { amount: 1234, currency: 'KWD' });
  });

  test('a fraction ISO cannot hold is kept as stated, never rounded', () => {
    assert.deepEqual(amountOf(paypalCapture('100.5', 'JPY')), {
      amount: 1005,
      currency: 'JPY',
      amount_decimals: 1,
    });
    assert.deepEqual(amountOf(paypalCapture('10.999', 'USD')), {
      amount: 10999,
      currency: 'USD',
      amount_decimals: 3,
    });
  });

  test('a code ISO does not list, or a value that is no decimal text, is refused at its field', () => {
    assert.equal(amountOf(paypalCapture('10.00', 'XYZ')), 'invalid resource.amount.currency_code');
    assert.equal(amountOf(paypalCapture(10, 'EUR')), 'invalid resource.amount.value');
    assert.equal(amountOf(paypalCapture('-1.00', 'EUR')), 'invalid resource.amount.value');
  });
});
