/**
 * Checkout.com's entry (src/providers/checkout): its documented payloads, signed here with a test
 * key the way Checkout.com signs (hex HMAC-SHA256 of the raw body in Cko-Signature, computed with
 * node:crypto, not with settle's signer), verify and become the canonical events written out by
 * hand below; every kind of bad request is refused as the gateway must refuse it.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CHECKOUT_SPEC } from '../../src/providers/checkout/spec';
import { createHmacAdapter, signHmac } from '../../src/providers/hmac/adapter';
import { readPointer } from '../../src/providers/hmac/json-pointer';
import type { AdaptedEvent, Verification } from '../../src/providers/types';

const FIXTURES = join(__dirname, '../../src/providers/checkout/fixtures');
const fixtureText = (name: string): string => readFileSync(join(FIXTURES, `${name}.json`), 'utf8');
const fixture = (name: string): Record<string, unknown> => JSON.parse(fixtureText(name));

/** Fixture `name` with the value at each pointer replaced, or removed where the value is undefined. */
function edited(name: string, edits: Record<string, unknown>): Record<string, unknown> {
  const event = fixture(name);
  for (const [pointer, value] of Object.entries(edits)) {
    const at = pointer.lastIndexOf('/');
    const parent = readPointer(event, pointer.slice(0, at)) as Record<string, unknown>;
    const key = pointer.slice(at + 1);
    if (value === undefined) delete parent[key];
    else parent[key] = value;
  }
  return event;
}

const newSecret = (): string => `sk_whk_${randomBytes(16).toString('hex')}`;
const ckoSignature = (body: string, secret: string): string =>
  createHmac('sha256', secret).update(body).digest('hex');

async function verify(
  body: string,
  headers: Record<string, string | string[] | undefined>,
  keys: string[],
): Promise<Verification> {
  return createHmacAdapter(CHECKOUT_SPEC, { keys }).verify({ rawBody: body, headers });
}

/** Verified, then adapted: what the gateway would admit for this body. */
async function admitted(body: string, secret: string): Promise<AdaptedEvent> {
  const adapter = createHmacAdapter(CHECKOUT_SPEC, { keys: [secret] });
  const verified = await adapter.verify({
    rawBody: body,
    headers: { 'cko-signature': ckoSignature(body, secret) },
  });
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.ok(verified.ok);
  assert.equal(verified.items.length, 1);
  return adapter.adapt(verified.items[0]);
}

describe("Checkout.com's documented events, signed and adapted", () => {
  const secret = newSecret();

  test('payment_captured is a capture of its reference, in EUR cents', async () => {
    assert.deepEqual(await admitted(fixtureText('payment_captured'), secret), {
      kind: 'payment',
      eventId: 'checkout:evt_fkfqht6yonme7bk7jawrgzbbxq',
      providerType: 'payment_captured',
      event: {
        id: 'checkout:evt_fkfqht6yonme7bk7jawrgzbbxq',
        type: 'payment.captured',
        created_at: '2023-05-24T09:12:32.357+00:00',
        data: {
          shipment_id: 'ORD-5023-4E89',
          payment_id: 'pay_vti5layihapu5bhbn5tjtk6eem',
          amount: 20,
          currency: 'EUR',
          provider: 'checkout',
          provider_type: 'payment_captured',
        },
      },
    });
  });

  test('payment_approved is an authorization', async () => {
    const adapted = await admitted(fixtureText('payment_approved'), secret);
    assert.equal(adapted.kind, 'payment');
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.event.type, 'payment.authorized');
    assert.equal(adapted.event.created_at, '2023-05-22T11:56:04.8821546Z');
    assert.deepEqual(
      [adapted.event.data.payment_id, adapted.event.data.amount, adapted.event.data.currency],
      ['pay_griq7wyqkggu7mnk7ecm6ysrl4', 20, 'USD'],
    );
  });

  test('payment_refunded is a refund named by its action, apart from the capture', async () => {
    const adapted = await admitted(fixtureText('payment_refunded'), secret);
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.eventId, 'checkout:evt_sojezy57bieu5hbxrmem74jx54');
    assert.equal(adapted.event.type, 'payment.refunded');
    assert.equal(adapted.event.data.refund_id, 'checkout:act_v3ap4uxinl6exk5hdgetatbywi');
    assert.equal(adapted.event.data.payment_id, 'pay_234iojjumr4ejphuvcsnpnugs4');
    assert.equal(adapted.event.data.amount, 40000);
  });

  test('payment_declined is a failure', async () => {
    const adapted = await admitted(fixtureText('payment_declined'), secret);
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.event.type, 'payment.failed');
    assert.equal(adapted.event.data.shipment_id, 'ORD-5023-4E89');
  });

  test("the same delivery twice is the same settle event (the provider's event ID)", async () => {
    const first = await admitted(fixtureText('payment_captured'), secret);
    const again = await admitted(fixtureText('payment_captured'), secret);
    assert.deepEqual(again, first);
  });

  test("settle's own signer writes what Checkout.com sends", () => {
    const body = fixtureText('payment_captured');
    assert.equal(signHmac(CHECKOUT_SPEC, body, secret), ckoSignature(body, secret));
  });
});

describe('Checkout.com requests refused', () => {
  const secret = newSecret();
  const body = fixtureText('payment_captured');

  const refusal = async (
    candidate: string,
    headers: Record<string, string | string[] | undefined>,
    keys = [secret],
  ) => {
    const verified = await verify(candidate, headers, keys);
    assert.equal(verified.ok, false);
    assert.ok(!verified.ok);
    return verified;
  };

  test('a signature made with another key', async () => {
    const verified = await refusal(body, { 'cko-signature': ckoSignature(body, newSecret()) });
    assert.equal(verified.kind, 'signature');
    assert.match(verified.reason, /no Cko-Signature signature matches a configured key/);
  });

  test('a body changed after signing (one digit of the amount)', async () => {
    const changed = body.replace('"amount": 20,', '"amount": 2000,');
    assert.notEqual(changed, body);
    const verified = await refusal(changed, { 'cko-signature': ckoSignature(body, secret) });
    assert.equal(verified.kind, 'signature');
  });

  test('no Cko-Signature header, or an empty one', async () => {
    for (const headers of [{}, { 'cko-signature': '' }]) {
      const verified = await refusal(body, headers);
      assert.equal(verified.kind, 'signature');
      assert.match(verified.reason, /missing Cko-Signature header/);
    }
  });

  test('a garbled header: not hex, truncated, or base64 of the right digest', async () => {
    const right = ckoSignature(body, secret);
    for (const garbled of [
      'not-a-signature',
      right.slice(0, 40),
      Buffer.from(right, 'hex').toString('base64'),
    ]) {
      const verified = await refusal(body, { 'cko-signature': garbled });
      assert.equal(verified.kind, 'signature', garbled);
    }
  });

  test('two Cko-Signature headers', async () => {
    const verified = await refusal(body, { 'cko-signature': [ckoSignature(body, secret), 'x'] });
    assert.equal(verified.kind, 'signature');
  });

  test('no key configured: every request is refused, naming the variable', async () => {
    const verified = await refusal(body, { 'cko-signature': ckoSignature(body, secret) }, []);
    assert.equal(verified.kind, 'signature');
    assert.match(verified.reason, /SETTLE_CHECKOUT_WEBHOOK_SECRETS/);
  });

  test('a signed body that is not JSON is malformed, not a signature failure', async () => {
    const text = 'not json';
    const verified = await refusal(text, { 'cko-signature': ckoSignature(text, secret) });
    assert.equal(verified.kind, 'malformed');
  });
});

describe('Checkout.com key rotation (SETTLE_CHECKOUT_WEBHOOK_SECRETS)', () => {
  test('an empty entry in the list does not build an adapter, naming the variable', () => {
    for (const keys of [[newSecret(), ''], [' ']]) {
      assert.throws(
        () => createHmacAdapter(CHECKOUT_SPEC, { keys }),
        /SETTLE_CHECKOUT_WEBHOOK_SECRETS has an empty key/,
      );
    }
  });

  test('either configured secret verifies; a retired one does not', async () => {
    const [retired, current, next] = [newSecret(), newSecret(), newSecret()];
    const body = fixtureText('payment_captured');
    for (const key of [current, next]) {
      const verified = await verify(body, { 'cko-signature': ckoSignature(body, key) }, [current, next]);
      assert.equal(verified.ok, true);
    }
    const verified = await verify(body, { 'cko-signature': ckoSignature(body, retired) }, [current, next]);
    assert.equal(verified.ok, false);
  });
});

describe("Checkout.com's amount units (Format the amount value)", () => {
  const captured = (amount: unknown, currency: string) => {
    const event = edited('payment_captured', { '/data/amount': amount, '/data/currency': currency });
    return createHmacAdapter(CHECKOUT_SPEC, { keys: [] }).adapt(event);
  };
  const amountOf = (adapted: AdaptedEvent) => {
    assert.ok(adapted.kind === 'payment', JSON.stringify(adapted));
    const { amount, amount_decimals } = adapted.event.data;
    return amount_decimals === undefined ? { amount } : { amount, amount_decimals };
  };

  test('CLP is counted in hundredths by Checkout.com, in whole pesos by ISO', () => {
    assert.deepEqual(amountOf(captured(500000, 'CLP')), { amount: 5000 });
  });

  test('CLP cents that ISO cannot express are kept as stated, marked inexact', () => {
    assert.deepEqual(amountOf(captured(500050, 'CLP')), { amount: 500050, amount_decimals: 2 });
  });

  test('the full-amount list (JPY, ISK) and the divided-by-1000 list (BHD) match ISO', () => {
    assert.deepEqual(amountOf(captured(100, 'JPY')), { amount: 100 });
    assert.deepEqual(amountOf(captured(100, 'ISK')), { amount: 100 });
    assert.deepEqual(amountOf(captured(100000, 'BHD')), { amount: 100000 });
  });

  test('every other currency is divided by 100', () => {
    assert.deepEqual(amountOf(captured(10000, 'USD')), { amount: 10000 });
  });
});

describe('Checkout.com events settle does not act on, or cannot place', () => {
  const adapter = createHmacAdapter(CHECKOUT_SPEC, { keys: [] });

  test('an unlisted type is ignored, with its ID', () => {
    for (const type of ['payment_capture_declined', 'card_verified', 'dispute_won']) {
      const event = edited('payment_captured', { '/type': type });
      assert.deepEqual(adapter.adapt(event), {
        kind: 'ignored',
        eventId: 'checkout:evt_fkfqht6yonme7bk7jawrgzbbxq',
        providerType: type,
        reason: 'not a type settle acts on',
      });
    }
  });

  test('no reference and no metadata.shipment_id: unmatched, the payload kept', () => {
    const event = edited('payment_captured', { '/data/reference': undefined });
    const adapted = adapter.adapt(event);
    assert.equal(adapted.kind, 'unmatched');
    assert.ok(adapted.kind === 'unmatched');
    assert.deepEqual(adapted.payload, event);
    assert.match(adapted.reason, /names no shipment: no data\.metadata\.shipment_id or data\.reference/);
  });

  test('a blank metadata.shipment_id leaves the reference to name the shipment', () => {
    const adapted = adapter.adapt(edited('payment_captured', { '/data/metadata/shipment_id': ' ' }));
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.event.data.shipment_id, 'ORD-5023-4E89');
  });

  test("metadata.shipment_id, where set, is the shipment rather than the merchant's reference", () => {
    const event = edited('payment_captured', { '/data/metadata/shipment_id': 'SHP-77' });
    const adapted = adapter.adapt(event);
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.event.data.shipment_id, 'SHP-77');
  });
});

describe("Checkout.com refusals name Checkout.com's field", () => {
  const adapter = createHmacAdapter(CHECKOUT_SPEC, { keys: [] });
  const refusal = (edits: Record<string, unknown>) => {
    const adapted = adapter.adapt(edited('payment_captured', edits));
    assert.ok(adapted.kind === 'invalid', JSON.stringify(adapted));
    return { path: adapted.path, message: adapted.message };
  };

  test('a currency ISO does not list', () => {
    assert.deepEqual(refusal({ '/data/currency': 'ABC' }), {
      path: 'data.currency',
      message: 'must be a currency code ISO 4217 lists',
    });
  });

  test('an amount that is no count of units', () => {
    assert.equal(refusal({ '/data/amount': '20' }).path, 'data.amount');
    assert.equal(refusal({ '/data/amount': -5 }).path, 'data.amount');
  });

  test('a reference that is not text', () => {
    assert.deepEqual(refusal({ '/data/reference': 4821 }), {
      path: 'data.reference',
      message: 'must be a string',
    });
  });

  test('no event ID, no type, no timestamp, no payment ID', () => {
    assert.equal(refusal({ '/id': undefined }).path, 'id');
    assert.equal(refusal({ '/type': '' }).path, 'type');
    assert.equal(refusal({ '/timestamp': undefined, '/data/processed_on': undefined }).path, 'created_on');
    assert.equal(refusal({ '/data/id': undefined }).path, 'data.id');
  });

  test('the spec names its route and variable, for the registry to wire', () => {
    assert.equal(CHECKOUT_SPEC.route, '/webhooks/checkout');
    assert.equal(CHECKOUT_SPEC.variables.keys, 'SETTLE_CHECKOUT_WEBHOOK_SECRETS');
  });
});
