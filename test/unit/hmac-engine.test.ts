/**
 * The HMAC engine (src/providers/hmac) is generic: a third, imaginary provider declared here as data
 * only (a Stripe-like `t=…,v1=…` header over `{timestamp}.{body}`, SHA-512 hex, decimal-text money,
 * a type refined by status) verifies, tolerates, rotates and adapts with no code of its own.
 * Signatures are computed here with node:crypto, not with the engine's signer.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { createHmacAdapter, hmacEventId, signHmac } from '../../src/providers/hmac/adapter';
import { pointerPath, readPointer } from '../../src/providers/hmac/json-pointer';
import type { HmacProviderSpec } from '../../src/providers/hmac/spec';
import type { Verification } from '../../src/providers/types';

const ACME: HmacProviderSpec<'acme'> = {
  name: 'acme',
  displayName: 'Acme Pay',
  route: '/webhooks/acme',
  variables: { keys: 'SETTLE_ACME_KEYS' },
  signature: {
    header: { name: 'Acme-Signature', format: 'pairs', timestampKey: 't', signatureKey: 'v1' },
    content: '{timestamp}.{body}',
    algorithm: 'sha512',
    encoding: 'hex',
    toleranceSeconds: 300,
  },
  fields: {
    eventId: '/event/id',
    type: '/event/kind',
    createdAt: ['/event/at'],
    // A key with a slash in it, escaped as RFC 6901 says.
    shipment: ['/charge/labels/shop~1shipment', '/charge/order'],
    paymentId: ['/charge/id'],
    refundId: ['/charge/refund/id'],
    amount: ['/charge/total/value'],
    currency: ['/charge/total/currency'],
    account: ['/merchant'],
  },
  types: {
    'charge.settled': { to: 'payment.captured' },
    'charge.refund': { status: '/charge/refund/state', to: { done: 'payment.refunded' } },
  },
  money: { kind: 'decimal-text' },
  mode: { pointer: '/event/live', live: true, test: false },
};

const NOW = 1_790_000_000;
const KEY = 'acme-test-key-one';
const SECOND_KEY = 'acme-test-key-two';

const charge = (overrides: Record<string, unknown> = {}) => ({
  event: { id: 'ev_01', kind: 'charge.settled', at: '2026-09-21T10:00:00Z' },
  merchant: 'm_42',
  charge: {
    id: 'ch_9',
    order: 'ORDER-9',
    labels: { 'shop/shipment': 'SHP-1' },
    total: { value: '10.99', currency: 'USD' },
  },
  ...overrides,
});

const acmeHeader = (body: string, key: string, timestamp: number, extra = ''): string =>
  `t=${timestamp},v1=${createHmac('sha512', key).update(`${timestamp}.${body}`).digest('hex')}${extra}`;

function verify(body: string, header: string | undefined, keys = [KEY]): Promise<Verification> {
  const adapter = createHmacAdapter(ACME, { keys, now: () => NOW * 1000 });
  return Promise.resolve(
    adapter.verify({ rawBody: body, headers: header === undefined ? {} : { 'acme-signature': header } }),
  );
}

describe('an imaginary provider, declared as data only', () => {
  const body = JSON.stringify(charge());

  test('a fresh signature verifies and the event adapts to the canonical capture', async () => {
    const adapter = createHmacAdapter(ACME, { keys: [KEY], now: () => NOW * 1000 });
    const verified = await adapter.verify({
      rawBody: body,
      headers: { 'acme-signature': acmeHeader(body, KEY, NOW - 10) },
    });
    assert.ok(verified.ok, JSON.stringify(verified));
    assert.deepEqual(adapter.adapt(verified.items[0]), {
      kind: 'payment',
      eventId: 'acme:ev_01',
      providerType: 'charge.settled',
      event: {
        id: 'acme:ev_01',
        type: 'payment.captured',
        created_at: '2026-09-21T10:00:00Z',
        data: {
          shipment_id: 'SHP-1',
          payment_id: 'ch_9',
          amount: 1099,
          currency: 'USD',
          provider: 'acme',
          provider_type: 'charge.settled',
          provider_account: 'm_42',
        },
      },
    });
  });

  test('a stale or far-future timestamp is refused, though the signature is right', async () => {
    for (const timestamp of [NOW - 301, NOW + 301]) {
      const verified = await verify(body, acmeHeader(body, KEY, timestamp));
      assert.ok(!verified.ok);
      assert.equal(verified.kind, 'signature');
      assert.equal(verified.reason, 'timestamp outside the 300 s tolerance');
    }
    assert.equal((await verify(body, acmeHeader(body, KEY, NOW - 300))).ok, true);
  });

  test('a timestamp changed after signing is refused', async () => {
    const header = acmeHeader(body, KEY, NOW).replace(`t=${NOW}`, `t=${NOW - 1}`);
    const verified = await verify(body, header);
    assert.ok(!verified.ok);
    assert.equal(verified.kind, 'signature');
  });

  test('one v1 per active secret: any one matching passes', async () => {
    const stale = createHmac('sha512', 'a retired key').update(`${NOW}.${body}`).digest('hex');
    assert.equal((await verify(body, acmeHeader(body, KEY, NOW, `,v1=${stale}`))).ok, true);
    const other = `t=${NOW},v1=${stale},${acmeHeader(body, KEY, NOW).split(',')[1]}`;
    assert.equal((await verify(body, other)).ok, true);
  });

  test('key rotation: the second configured key verifies', async () => {
    assert.equal((await verify(body, acmeHeader(body, SECOND_KEY, NOW), [KEY, SECOND_KEY])).ok, true);
    assert.equal((await verify(body, acmeHeader(body, SECOND_KEY, NOW), [KEY])).ok, false);
  });

  test('wrong key, changed body, missing or garbled header: signature refusals', async () => {
    const cases: Array<[string, string | undefined, RegExp]> = [
      [body, acmeHeader(body, 'another key', NOW), /no Acme-Signature signature matches/],
      [body.replace('10.99', '1099'), acmeHeader(body, KEY, NOW), /no Acme-Signature signature matches/],
      [body, undefined, /missing Acme-Signature header/],
      [body, `v1=${acmeHeader(body, KEY, NOW).split('v1=')[1]}`, /malformed Acme-Signature header/],
      [body, `t=${NOW},t=${NOW},v1=00`, /malformed Acme-Signature header/],
      [body, `t=${NOW}`, /malformed Acme-Signature header/],
      [body, `t=soon,v1=00`, /malformed Acme-Signature header/],
      [body, 'garbage', /malformed Acme-Signature header/],
      [body, `t=${NOW},v1=not-hex`, /malformed Acme-Signature header/],
    ];
    for (const [candidate, header, reason] of cases) {
      const verified = await verify(candidate, header);
      assert.ok(!verified.ok, String(header));
      assert.equal(verified.kind, 'signature', String(header));
      assert.match(verified.reason, reason, String(header));
    }
  });

  test("the engine's signer writes the provider's header", async () => {
    const header = signHmac(ACME, body, KEY, { timestamp: NOW });
    assert.equal(header, acmeHeader(body, KEY, NOW));
    assert.equal((await verify(body, header)).ok, true);
  });

  test('a type refined by status: only the listed status acts', () => {
    const adapter = createHmacAdapter(ACME, { keys: [] });
    const refund = (state: string) =>
      adapter.adapt(
        charge({
          event: { id: 'ev_02', kind: 'charge.refund', at: '2026-09-21T11:00:00Z' },
          charge: {
            id: 'ch_9',
            order: 'ORDER-9',
            total: { value: '5', currency: 'USD' },
            refund: { id: 're_1', state },
          },
        }),
      );
    const done = refund('done');
    assert.ok(done.kind === 'payment');
    assert.equal(done.event.type, 'payment.refunded');
    assert.equal(done.event.data.refund_id, 'acme:re_1');
    // The first shipment candidate is absent: the second one is read.
    assert.equal(done.event.data.shipment_id, 'ORDER-9');
    assert.equal(done.event.data.amount, 500);
    assert.deepEqual(refund('queued'), {
      kind: 'ignored',
      eventId: 'acme:ev_02',
      providerType: 'charge.refund:queued',
      reason: 'a charge.refund with status queued changes nothing',
    });
  });

  test('decimal text: more decimals than ISO gives is kept as stated; not decimal text is refused', () => {
    const adapter = createHmacAdapter(ACME, { keys: [] });
    const withTotal = (value: unknown, currency: string) =>
      adapter.adapt(charge({ charge: { id: 'ch_9', order: 'O-1', total: { value, currency } } }));
    const yen = withTotal('100.5', 'JPY');
    assert.ok(yen.kind === 'payment');
    assert.deepEqual([yen.event.data.amount, yen.event.data.amount_decimals], [1005, 1]);
    assert.deepEqual(withTotal(10.99, 'USD'), {
      kind: 'invalid',
      eventId: 'acme:ev_01',
      path: 'charge.total.value',
      message: 'must be a decimal amount such as "10.99", at most 15 digits',
    });
  });

  test("an ID outside settle's ID rule becomes a stable hash under the provider's prefix", () => {
    const id = 'ev with spaces/and/slashes';
    const adapted = createHmacAdapter(ACME, { keys: [] }).adapt(
      charge({ event: { id, kind: 'charge.settled', at: '2026-09-21T10:00:00Z' } }),
    );
    assert.equal(adapted.eventId, hmacEventId(ACME, id));
    assert.match(String(adapted.eventId), /^acme:sha256:[0-9a-f]{64}$/);
  });

  test('the mode is read where the spec says, from a request and from an export line', async () => {
    const adapter = createHmacAdapter(ACME, { keys: [KEY], now: () => NOW * 1000 });
    for (const [live, mode] of [
      [true, 'live'],
      [false, 'test'],
      ['yes', undefined],
    ] as const) {
      const event = charge({
        event: { id: 'ev_03', kind: 'charge.settled', at: '2026-09-21T10:00:00Z', live },
      });
      const text = JSON.stringify(event);
      const verified = await adapter.verify({
        rawBody: text,
        headers: { 'acme-signature': acmeHeader(text, KEY, NOW) },
      });
      assert.ok(verified.ok);
      assert.equal(verified.mode, mode);
      assert.equal(adapter.exportMode(event), mode);
    }
  });

  test('a signed body that is a JSON array, not an object, is malformed', async () => {
    const verified = await verify('[1,2]', acmeHeader('[1,2]', KEY, NOW));
    assert.ok(!verified.ok);
    assert.equal(verified.kind, 'malformed');
  });
});

describe('other schemes, from data alone', () => {
  const hub: HmacProviderSpec = {
    ...ACME,
    signature: {
      header: { name: 'X-Hub-Signature-256', format: 'plain', prefix: 'sha256=' },
      content: '{body}',
      algorithm: 'sha256',
      encoding: 'hex',
    },
  };
  const body = JSON.stringify(charge());
  const digest = createHmac('sha256', KEY).update(body).digest('hex');
  const hubVerify = (value: string) =>
    Promise.resolve(
      createHmacAdapter(hub, { keys: [KEY] }).verify({
        rawBody: body,
        headers: { 'x-hub-signature-256': value },
      }),
    );

  test('a plain header with a prefix: the prefix is required, then the digest', async () => {
    assert.equal((await hubVerify(`sha256=${digest}`)).ok, true);
    for (const value of [digest, `sha1=${digest}`, 'sha256=']) {
      const verified = await hubVerify(value);
      assert.ok(!verified.ok, value);
      assert.equal(verified.kind, 'signature', value);
    }
    assert.equal(signHmac(hub, body, KEY), `sha256=${digest}`);
  });

  test('SHA-1 in base64 over the URL and body, padded or not', async () => {
    const legacy: HmacProviderSpec = {
      ...ACME,
      signature: {
        header: { name: 'X-Legacy-Signature', format: 'plain' },
        content: '{url}{body}',
        algorithm: 'sha1',
        encoding: 'base64',
      },
    };
    const url = 'https://settle.example.com/webhooks/acme';
    const signature = createHmac('sha1', KEY)
      .update(url + body)
      .digest('base64');
    assert.match(signature, /=$/);
    const adapter = createHmacAdapter(legacy, { keys: [KEY], notificationUrl: url });
    for (const value of [signature, signature.replace(/=+$/, '')]) {
      const verified = await adapter.verify({ rawBody: body, headers: { 'x-legacy-signature': value } });
      assert.equal(verified.ok, true, value);
    }
    const sha256 = createHmac('sha256', KEY)
      .update(url + body)
      .digest('base64');
    const verified = await adapter.verify({ rawBody: body, headers: { 'x-legacy-signature': sha256 } });
    assert.equal(verified.ok, false);
  });
});

describe('specs the engine cannot honour are refused when the adapter is built', () => {
  test('{timestamp}.{body} with a plain header states no timestamp', () => {
    const spec: HmacProviderSpec = {
      ...ACME,
      signature: { ...ACME.signature, header: { name: 'Acme-Signature', format: 'plain' } },
    };
    assert.throws(() => createHmacAdapter(spec, { keys: [KEY] }), /needs a pairs header/);
  });

  test('a signed timestamp with no tolerance', () => {
    const spec: HmacProviderSpec = {
      ...ACME,
      signature: { ...ACME.signature, toleranceSeconds: undefined },
    };
    assert.throws(() => createHmacAdapter(spec, { keys: [KEY] }), /toleranceSeconds/);
  });
});

describe('RFC 6901 pointers', () => {
  const document = { a: { 'b/c': [10, { 'm~n': 'x' }] }, '': 'empty key' };

  test('escapes and array indexes', () => {
    assert.equal(readPointer(document, '/a/b~1c/0'), 10);
    assert.equal(readPointer(document, '/a/b~1c/1/m~0n'), 'x');
    assert.equal(readPointer(document, '/'), 'empty key');
    assert.equal(readPointer(document, ''), document);
  });

  test('a missing step, a bad index or an inherited property is undefined', () => {
    assert.equal(readPointer(document, '/a/missing/deeper'), undefined);
    assert.equal(readPointer(document, '/a/b~1c/01'), undefined);
    assert.equal(readPointer(document, '/a/toString'), undefined);
  });

  test('a pointer reads as the dotted field path refusals name', () => {
    assert.equal(
      pointerPath('/data/object/payment/amount_money/amount'),
      'data.object.payment.amount_money.amount',
    );
  });
});
