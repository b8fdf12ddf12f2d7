import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type pg from 'pg';
import { takeProviderTransmission } from '../../src/app/admit-provider-event';
import { CONFIG_DEFAULTS, ConfigError, loadConfig } from '../../src/config';
import { paypalWebhookIds } from '../../src/providers/paypal/config';
import { OPEN_ACCOUNT_POLICY, paymentMismatch } from '../../src/domain/payment-rules';
import { PROVIDERS } from '../../src/providers/registry';
import { adaptPaypalEvent } from '../../src/providers/paypal/adapter';
import { paypalCapture, paypalEvent, paypalRefund } from '../../testkit/paypal-api';

const MERCHANT = 'MERCHANT7EK3Q';

function payment(item: unknown) {
  const adapted = adaptPaypalEvent(item);
  assert.equal(adapted.kind, 'payment', JSON.stringify(adapted));
  return (adapted as Extract<typeof adapted, { kind: 'payment' }>).event;
}

describe('PayPal event types settle decides on (docs/providers.md)', () => {
  test('PAYMENT.CAPTURE.DENIED fails the payment of its capture', () => {
    const capture = { ...paypalCapture('SHP-1', '42.00', 'EUR'), status: 'DENIED' };
    const event = payment(paypalEvent('PAYMENT.CAPTURE.DENIED', capture));
    assert.equal(event.type, 'payment.failed');
    assert.equal(event.data.shipment_id, 'SHP-1');
    assert.equal(event.data.payment_id, capture.id);
  });

  test('PAYMENT.CAPTURE.PENDING and CUSTOMER.DISPUTE.RESOLVED are ignored, saying why', () => {
    const pending = adaptPaypalEvent(
      paypalEvent('PAYMENT.CAPTURE.PENDING', {
        ...paypalCapture('SHP-1'),
        status: 'PENDING',
        status_details: { reason: 'PENDING_REVIEW' },
      }),
    );
    assert.equal(pending.kind, 'ignored');
    assert.match(
      pending.kind === 'ignored' ? pending.reason : '',
      /pending capture moves no money \(PENDING_REVIEW\)/,
    );
    const resolved = adaptPaypalEvent(
      paypalEvent('CUSTOMER.DISPUTE.RESOLVED', {
        dispute_id: 'PP-D-1',
        dispute_outcome: { outcome_code: 'RESOLVED_BUYER_FAVOUR' },
        disputed_transactions: [{ seller_transaction_id: 'CAP1', custom: 'SHP-1' }],
      }),
    );
    assert.equal(resolved.kind, 'ignored');
    assert.match(
      resolved.kind === 'ignored' ? resolved.reason : '',
      /RESOLVED_BUYER_FAVOUR.*PAYMENT\.CAPTURE\.REVERSED/,
    );
  });
});

describe('the PayPal merchant (SETTLE_PAYPAL_MERCHANT_IDS)', () => {
  test("is read from a capture's payee, a refund's payer and a dispute's seller", () => {
    const capture = { ...paypalCapture('SHP-1'), payee: { merchant_id: MERCHANT } };
    assert.equal(payment(paypalEvent('PAYMENT.CAPTURE.COMPLETED', capture)).data.provider_account, MERCHANT);
    const refund = { ...paypalRefund(capture.id, 'SHP-1'), payer: { merchant_id: MERCHANT } };
    assert.equal(payment(paypalEvent('PAYMENT.CAPTURE.REFUNDED', refund)).data.provider_account, MERCHANT);
    const dispute = {
      dispute_id: 'PP-D-2',
      dispute_amount: { currency_code: 'EUR', value: '42.00' },
      disputed_transactions: [
        { seller_transaction_id: capture.id, custom: 'SHP-1', seller: { merchant_id: MERCHANT } },
      ],
    };
    assert.equal(payment(paypalEvent('CUSTOMER.DISPUTE.CREATED', dispute)).data.provider_account, MERCHANT);
    // None named: no account (and the payload hash is as before).
    assert.equal(
      'provider_account' in payment(paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture('SHP-1'))).data,
      false,
    );
  });

  test('with the list set, a payment of another merchant or of none is account_not_allowed; unset, any is taken', () => {
    const facts = (account?: string) => ({
      type: 'payment.captured' as const,
      amount: 4200,
      currency: 'EUR',
      provider: 'paypal',
      ...(account ? { provider_account: account } : {}),
    });
    const expected = { amount: null, currency: null };
    const allowed = {
      paypal: PROVIDERS.paypal.accountRule!({ ...CONFIG_DEFAULTS, paypalMerchantIds: [MERCHANT] } as never),
    };
    assert.equal(paymentMismatch(facts(MERCHANT), expected, allowed), undefined);
    assert.deepEqual(paymentMismatch(facts('OTHERMERCHANT'), expected, allowed), {
      reason: 'account_not_allowed',
      detail: 'PayPal merchant OTHERMERCHANT is not in SETTLE_PAYPAL_MERCHANT_IDS',
    });
    assert.equal(paymentMismatch(facts(), expected, allowed)?.reason, 'account_not_allowed');
    assert.equal(
      paymentMismatch({ ...facts('OTHERMERCHANT'), type: 'payment.refunded' }, expected, allowed)?.reason,
      'account_not_allowed',
    );
    assert.equal(paymentMismatch(facts('OTHERMERCHANT'), expected, OPEN_ACCOUNT_POLICY), undefined);
  });
});

describe('PayPal webhook IDs in the configuration', () => {
  const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: 'localhost:7233' };
  const load = (env: Record<string, string>) => loadConfig({ ...base, ...env }, { temporal: 'dev-stack' });

  test('SETTLE_PAYPAL_WEBHOOK_IDS and a list in SETTLE_PAYPAL_WEBHOOK_ID are all taken', () => {
    assert.deepEqual(paypalWebhookIds(load({ SETTLE_PAYPAL_WEBHOOK_ID: '1JE4291016473214C' })), [
      '1JE4291016473214C',
    ]);
    assert.deepEqual(
      paypalWebhookIds(
        load({ SETTLE_PAYPAL_WEBHOOK_ID: 'OLD1, OLD2', SETTLE_PAYPAL_WEBHOOK_IDS: 'NEW3,WEBHOOK_ID,OLD1' }),
      ),
      ['OLD1', 'OLD2', 'NEW3', 'WEBHOOK_ID'],
    );
    assert.deepEqual(load({ SETTLE_PAYPAL_MERCHANT_IDS: `${MERCHANT},OTHER2` }).paypalMerchantIds, [
      MERCHANT,
      'OTHER2',
    ]);
  });

  test("a bad ID, or PayPal's simulator's WEBHOOK_ID in live mode, stops the start naming the variable", () => {
    const refusal = (env: Record<string, string>) => {
      try {
        load(env);
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.message;
      }
      return assert.fail('no ConfigError');
    };
    assert.match(refusal({ SETTLE_PAYPAL_WEBHOOK_IDS: 'A|B' }), /SETTLE_PAYPAL_WEBHOOK_IDS: /);
    assert.match(refusal({ SETTLE_PAYPAL_WEBHOOK_ID: 'A,|' }), /SETTLE_PAYPAL_WEBHOOK_ID: /);
    assert.match(refusal({ SETTLE_PAYPAL_MERCHANT_IDS: 'not a merchant' }), /SETTLE_PAYPAL_MERCHANT_IDS: /);
    assert.match(
      refusal({ SETTLE_PAYPAL_WEBHOOK_IDS: 'WEBHOOK_ID', SETTLE_PROVIDER_MODE: 'live' }),
      /SETTLE_PAYPAL_WEBHOOK_IDS: lists WEBHOOK_ID/,
    );
    assert.match(
      refusal({ SETTLE_PAYPAL_WEBHOOK_ID: 'WEBHOOK_ID', SETTLE_PROVIDER_MODE: 'live' }),
      /SETTLE_PAYPAL_WEBHOOK_ID: lists WEBHOOK_ID/,
    );
    assert.deepEqual(
      paypalWebhookIds(load({ SETTLE_PAYPAL_WEBHOOK_IDS: 'WEBHOOK_ID', SETTLE_PROVIDER_MODE: 'test' })),
      ['WEBHOOK_ID'],
    );
  });
});

describe('taking a transmission when PostgreSQL is down', () => {
  test('is unavailable (a 503 with Retry-After at the route), never a refusal of the delivery', async () => {
    const down = {
      query: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      },
    } as unknown as pg.Pool;
    assert.deepEqual(
      await takeProviderTransmission(
        { pool: down },
        'paypal',
        { id: 'b7a3c2e0-0000-4000-8000-000000000001', header: 'paypal-transmission-id' },
        '{}',
      ),
      { status: 'unavailable', dependency: 'postgres' },
    );
  });
});
