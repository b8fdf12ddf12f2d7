/**
 * Adyen's amounts in Adyen's units (docs/providers.md, "Money units";
 * docs.adyen.com/development-resources/currency-codes), converted to ISO 4217 minor units at each
 * difference Adyen documents. Expected figures are written by hand from Adyen's table and ISO 4217.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adaptAdyenItem } from '../../src/providers/adyen/adapter';
import type { AdaptedEvent } from '../../src/providers/types';
import { adaptedAmount as amountOf } from '../support/providers';

function adyenCapture(value: unknown, currency: unknown): AdaptedEvent {
  return adaptAdyenItem({
    pspReference: 'PSP2',
    originalReference: 'PSP1',
    merchantAccountCode: 'SettleTestECOM',
    merchantReference: 'SHP-1',
    amount: { value, currency },
    eventCode: 'CAPTURE',
    eventDate: '2026-08-10T02:14:00+02:00',
    success: 'true',
  });
}

describe("Adyen's units (docs.adyen.com/development-resources/currency-codes)", () => {
  test('its four differences from ISO: CLP 2, CVE 0, IDR 0, ISK 2', () => {
    assert.deepEqual(amountOf(adyenCapture(500000, 'CLP')), { amount: 5000, currency: 'CLP' });
    assert.deepEqual(amountOf(adyenCapture(1000, 'CVE')), { amount: 100000, currency: 'CVE' });
    assert.deepEqual(amountOf(adyenCapture(15000, 'IDR')), { amount: 1500000, currency: 'IDR' });
    assert.deepEqual(amountOf(adyenCapture(100000, 'ISK')), { amount: 1000, currency: 'ISK' });
  });

  test('every other currency in ISO minor units', () => {
    assert.deepEqual(amountOf(adyenCapture(12500, 'EUR')), { amount: 12500, currency: 'EUR' });
    assert.deepEqual(amountOf(adyenCapture(500, 'JPY')), { amount: 500, currency: 'JPY' });
    assert.deepEqual(amountOf(adyenCapture(5125, 'KWD')), { amount: 5125, currency: 'KWD' });
    assert.deepEqual(amountOf(adyenCapture(500000, 'HUF')), { amount: 500000, currency: 'HUF' });
  });

  test('hundredths of a peso or a króna cannot be ISO minor units: kept as stated', () => {
    assert.deepEqual(amountOf(adyenCapture(500050, 'CLP')), {
      amount: 500050,
      currency: 'CLP',
      amount_decimals: 2,
    });
    assert.deepEqual(amountOf(adyenCapture(100001, 'ISK')), {
      amount: 100001,
      currency: 'ISK',
      amount_decimals: 2,
    });
  });

  test('a code ISO does not list is refused at amount.currency', () => {
    assert.equal(amountOf(adyenCapture(100, 'XYZ')), 'invalid amount.currency');
    assert.equal(amountOf(adyenCapture(100, 'eur')), 'invalid amount.currency');
  });
});
