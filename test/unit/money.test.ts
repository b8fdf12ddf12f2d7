/**
 * Money has one unit inside settle (SPEC.md, "Payment events"): ISO 4217 minor units from the
 * `currency-codes` data, never from `Intl`, and each provider's amount converted from that provider's
 * own documented units (docs/providers.md, "Money units"). The expected figures here are written out
 * by hand from ISO 4217 and from each provider's documentation, so they hold whatever ICU data the Node
 * running them carries (CI runs them on Node 20 and Node 24).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  formatUnits,
  fromProviderUnits,
  isoMinorDigits,
  majorToMinorUnits,
  readDecimalText,
} from '../../src/domain/money';
import { readPaymentEvent } from '../../src/domain/payment-event';
import { paymentMismatch, OPEN_ACCOUNT_POLICY } from '../../src/domain/payment-rules';

/** ISO 4217 list one's minor units for the currencies the providers treat differently, and a few more. */
const ISO_DIGITS: Record<string, number> = {
  EUR: 2,
  USD: 2,
  HUF: 2,
  TWD: 2,
  CVE: 2,
  IDR: 2,
  MGA: 2,
  ISK: 0,
  CLP: 0,
  JPY: 0,
  UGX: 0,
  KRW: 0,
  KWD: 3,
  BHD: 3,
  IQD: 3,
  CLF: 4,
};

describe('ISO 4217 minor units (src/domain/money.ts)', () => {
  test('the digits are ISO 4217 list one, not the runtime display data', () => {
    for (const [code, digits] of Object.entries(ISO_DIGITS)) {
      assert.equal(isoMinorDigits(code), digits, code);
    }
  });

  test('a code ISO does not list has none: a made-up code, lower case, a withdrawn one', () => {
    for (const code of ['ABC', 'huf', 'EURO', '', 'MRO', 'HRK'])
      assert.equal(isoMinorDigits(code), undefined, code);
  });

  test("a shipment's expectation in major units is stored in ISO minor units", () => {
    const cases: [string, string, number][] = [
      ['5000', 'HUF', 500000],
      ['42000', 'HUF', 4200000],
      ['1000', 'ISK', 1000],
      ['5000', 'CLP', 5000],
      ['1000', 'CVE', 100000],
      ['100', 'TWD', 10000],
      ['42.00', 'EUR', 4200],
      ['19.99', 'USD', 1999],
      ['0.5', 'EUR', 50],
      ['1.234', 'KWD', 1234],
      ['500', 'JPY', 500],
    ];
    for (const [text, currency, minor] of cases) {
      assert.deepEqual(majorToMinorUnits(text, currency), { ok: true, amount: minor }, `${text} ${currency}`);
    }
  });

  test('an expectation with more decimals than ISO gives, or in a code ISO does not list, is refused', () => {
    const refused = (text: string, currency: string) => {
      const read = majorToMinorUnits(text, currency);
      assert.equal(read.ok, false, `${text} ${currency}`);
      return read.ok ? '' : read.message;
    };
    assert.match(refused('42.5', 'JPY'), /at most 0 decimal/);
    assert.match(refused('1000.5', 'ISK'), /at most 0 decimal/);
    assert.match(refused('1.2345', 'KWD'), /at most 3 decimal/);
    assert.match(refused('42', 'ABC'), /ABC is not an ISO 4217 code/);
    for (const text of ['', '-1', '1e3', '1,000', ' 1', '1.', '.5', '1234567890123456']) {
      assert.match(refused(text, 'EUR'), /at most 2 decimal/, JSON.stringify(text));
    }
  });

  test("a provider's count converts exactly, or is kept as stated with its decimals", () => {
    assert.deepEqual(fromProviderUnits(100000, 2, 'ISK'), { amount: 1000 });
    assert.deepEqual(fromProviderUnits(100050, 2, 'ISK'), { amount: 100050, amount_decimals: 2 });
    assert.deepEqual(fromProviderUnits(1000, 0, 'CVE'), { amount: 100000 });
    assert.deepEqual(fromProviderUnits(12500, 2, 'EUR'), { amount: 12500 });
    assert.deepEqual(fromProviderUnits(5, 1, 'JPY'), { amount: 5, amount_decimals: 1 });
  });

  test('decimal text is read exactly, digit by digit', () => {
    assert.deepEqual(readDecimalText('100'), { value: 100, decimals: 0 });
    assert.deepEqual(readDecimalText('10.99'), { value: 1099, decimals: 2 });
    assert.deepEqual(readDecimalText('0.05'), { value: 5, decimals: 2 });
    assert.deepEqual(readDecimalText('1000.50'), { value: 100050, decimals: 2 });
    for (const text of [100, '', '-1', '1e2', '0x10', '1.', '.5', '1 000', '1234567890123456']) {
      assert.equal(readDecimalText(text), undefined, JSON.stringify(text));
    }
  });

  test('minor units display in the currency’s ISO digits, by integer arithmetic', () => {
    assert.equal(formatUnits(12500, 'EUR'), '125.00');
    assert.equal(formatUnits(500000, 'HUF'), '5000.00');
    assert.equal(formatUnits(1000, 'ISK'), '1000');
    assert.equal(formatUnits(5, 'KWD'), '0.005');
    assert.equal(formatUnits(100050, 'ISK', 2), '1000.50');
    assert.equal(formatUnits(12500, 'ABC'), '12500');
    assert.equal(formatUnits(12500, 'EUR', 1e9), '12500');
  });
});

describe('an amount ISO cannot express is held for review, for every type', () => {
  const expected = { amount: 1000, currency: 'ISK' };
  for (const type of [
    'payment.authorized',
    'payment.captured',
    'payment.settled',
    'payment.refunded',
    'payment.failed',
  ] as const) {
    test(type, () => {
      const facts = { type, amount: 100050, currency: 'ISK', amount_decimals: 2, provider: 'stripe' };
      const mismatch = paymentMismatch(facts, expected, OPEN_ACCOUNT_POLICY);
      assert.equal(mismatch?.reason, 'amount_inexact');
      assert.match(
        mismatch.detail,
        /paid 1000\.50 ISK: inexact, ISO 4217 gives ISK 0 decimal\(s\); nothing was rounded/,
      );
    });
  }

  test('an exact amount with no amount_decimals meets the usual rule', () => {
    const facts = { type: 'payment.captured' as const, amount: 1000, currency: 'ISK' };
    assert.equal(paymentMismatch(facts, { amount: 1000, currency: 'ISK' }, OPEN_ACCOUNT_POLICY), undefined);
    assert.equal(
      paymentMismatch({ ...facts, amount: 42000 }, { amount: 4200000, currency: 'ISK' }, OPEN_ACCOUNT_POLICY)
        ?.reason,
      'amount_short',
    );
  });
});

describe('the canonical route takes codes ISO lists', () => {
  const body = (currency: string) =>
    JSON.stringify({
      id: 'pay_money_1',
      type: 'payment.captured',
      created_at: '2026-08-10T02:14:00Z',
      data: { shipment_id: 'SHP-1', payment_id: 'pi_1', amount: 500000, currency },
    });

  test('HUF 500000 is read as it is: 5,000 forints', () => {
    const read = readPaymentEvent(body('HUF'));
    assert.equal(read.ok, true);
  });

  test('a well-shaped code ISO does not list is refused at data.currency', () => {
    const read = readPaymentEvent(body('ABC'));
    assert.equal(read.ok, false);
    assert.deepEqual(read.ok ? [] : read.issues.map((issue) => issue.path), ['data.currency']);
  });
});
