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
import { readPaymentEvent, type PaymentEvent } from '../../src/domain/payment-event';
import { paymentMismatch, OPEN_ACCOUNT_POLICY } from '../../src/domain/payment-rules';
import { adaptAdyenItem } from '../../src/providers/adyen';
import { adaptPaypalEvent } from '../../src/providers/paypal';
import { adaptStripeEvent } from '../../src/providers/stripe';
import type { AdaptedEvent } from '../../src/providers/types';

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

/** The canonical event's amount fields an adapter produced, or the refusal's path. */
function amountOf(adapted: AdaptedEvent): Record<string, unknown> | string {
  if (adapted.kind === 'invalid') return `invalid ${adapted.path}`;
  assert.equal(adapted.kind, 'payment', JSON.stringify(adapted));
  const data = (adapted as { event: PaymentEvent }).event.data;
  return {
    amount: data.amount,
    currency: data.currency,
    ...(data.amount_decimals !== undefined ? { amount_decimals: data.amount_decimals } : {}),
  };
}

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
