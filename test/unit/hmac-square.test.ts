/**
 * Square's entry (src/providers/square): the signature test vector Square's own SDKs publish
 * verifies; documented payloads, signed here the way Square signs (base64 HMAC-SHA256 of the
 * notification URL followed by the raw body, computed with node:crypto), become the canonical
 * events written out by hand; bad requests are refused as the gateway must refuse them.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config';
import { createHmacAdapter, signHmac } from '../../src/providers/hmac/adapter';
import { SQUARE_SPEC } from '../../src/providers/square/spec';
import { readPointer } from '../../src/providers/hmac/json-pointer';
import type { AdaptedEvent, Verification } from '../../src/providers/types';

const FIXTURES = join(__dirname, '../../src/providers/square/fixtures');
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

const URL = 'https://settle.example.com/webhooks/square';
const newKey = (): string => randomBytes(16).toString('base64url');
const squareSignature = (url: string, body: string, key: string): string =>
  createHmac('sha256', key)
    .update(url + body)
    .digest('base64');

function verify(
  body: string,
  headers: Record<string, string | string[] | undefined>,
  keys: string[],
  notificationUrl = URL,
): Promise<Verification> {
  return Promise.resolve(
    createHmacAdapter(SQUARE_SPEC, { keys, notificationUrl }).verify({ rawBody: body, headers }),
  );
}

async function admitted(name: string, key: string): Promise<AdaptedEvent> {
  const body = fixtureText(name);
  const adapter = createHmacAdapter(SQUARE_SPEC, { keys: [key], notificationUrl: URL });
  const verified = await adapter.verify({
    rawBody: body,
    headers: { 'x-square-hmacsha256-signature': squareSignature(URL, body, key) },
  });
  assert.ok(verified.ok, JSON.stringify(verified));
  assert.equal(verified.items.length, 1);
  return adapter.adapt(verified.items[0]);
}

describe("Square's published signature test vector", () => {
  const vector = fixture('published-signature') as {
    notificationUrl: string;
    signatureKey: string;
    signature: string;
    body: string;
  };

  test('verifies with its notification URL and key, and is a test notification settle ignores', async () => {
    const adapter = createHmacAdapter(SQUARE_SPEC, {
      keys: [vector.signatureKey],
      notificationUrl: vector.notificationUrl,
    });
    const verified = await adapter.verify({
      rawBody: vector.body,
      headers: { 'x-square-hmacsha256-signature': vector.signature },
    });
    assert.ok(verified.ok, JSON.stringify(verified));
    assert.deepEqual(adapter.adapt(verified.items[0]), {
      kind: 'ignored',
      eventId: 'square:ac3ac95b-f97d-458c-a6e6-18981597e05f',
      providerType: 'webhooks.test_notification',
      reason: 'not a type settle acts on',
    });
  });

  test('its key, published with it, is refused as a configured key, naming the variable', () => {
    assert.throws(
      () =>
        loadConfig({
          DATABASE_URL: 'postgres://localhost/settle',
          TEMPORAL_ADDRESS: '127.0.0.1:7233',
          SETTLE_SQUARE_SIGNATURE_KEYS: vector.signatureKey,
          SETTLE_SQUARE_NOTIFICATION_URL: vector.notificationUrl,
        }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.issues.map((issue) => issue.variable).join() === 'SETTLE_SQUARE_SIGNATURE_KEYS' &&
        !error.message.includes(vector.signatureKey),
    );
  });

  test("settle's signer reproduces it", () => {
    assert.equal(
      signHmac(SQUARE_SPEC, vector.body, vector.signatureKey, { url: vector.notificationUrl }),
      vector.signature,
    );
  });

  test('another configured notification URL refuses it: the URL is signed', async () => {
    const verified = await verify(
      vector.body,
      { 'x-square-hmacsha256-signature': vector.signature },
      [vector.signatureKey],
      'https://webhook.site/another',
    );
    assert.equal(verified.ok, false);
    assert.ok(!verified.ok);
    assert.equal(verified.kind, 'signature');
  });

  test("the request's own Host and forwarding headers do not stand in for the configured URL", async () => {
    const verified = await verify(
      vector.body,
      {
        'x-square-hmacsha256-signature': vector.signature,
        host: 'webhook.site',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'webhook.site',
      },
      [vector.signatureKey],
      URL,
    );
    assert.equal(verified.ok, false);
  });
});

describe("Square's documented events, signed and adapted", () => {
  const key = newKey();

  test('payment.updated COMPLETED is a capture of its reference_id, for its merchant', async () => {
    assert.deepEqual(await admitted('payment.updated-completed', key), {
      kind: 'payment',
      eventId: 'square:6a8f5f28-54a1-4eb0-a98a-3111513fd4fc',
      providerType: 'payment.updated:COMPLETED',
      event: {
        id: 'square:6a8f5f28-54a1-4eb0-a98a-3111513fd4fc',
        type: 'payment.captured',
        created_at: '2020-02-06T21:27:34.308Z',
        data: {
          shipment_id: 'SHP-4821',
          payment_id: 'hYy9pRFVxpDsO1FB05SunFWUe9JZY',
          amount: 100,
          currency: 'USD',
          provider: 'square',
          provider_type: 'payment.updated:COMPLETED',
          provider_account: '6SSW7HV8K2ST5',
        },
      },
    });
  });

  test('payment.created APPROVED is an authorization; JPY amounts are whole yen', async () => {
    const adapted = await admitted('payment.created-approved', key);
    assert.ok(adapted.kind === 'payment');
    assert.equal(adapted.event.type, 'payment.authorized');
    assert.deepEqual(
      [adapted.event.data.shipment_id, adapted.event.data.amount, adapted.event.data.currency],
      ['SHP-7310', 5000, 'JPY'],
    );
  });

  test("refund.updated COMPLETED names no shipment (Square's refund has no reference_id): unmatched", async () => {
    const adapted = await admitted('refund.updated-completed', key);
    assert.equal(adapted.kind, 'unmatched');
    assert.ok(adapted.kind === 'unmatched');
    assert.equal(adapted.eventId, 'square:4b8e5c91-9f17-4cf1-900d-4cccb7ba8b1b');
    assert.equal(adapted.providerType, 'refund.updated:COMPLETED');
    assert.match(adapted.reason, /Square refund\.updated names no shipment/);
    // It names the payment it refunds: admission looks up that payment's shipment among Square's
    // own captures, and the refund read again with it is a refund of that shipment.
    assert.equal(adapted.byPayment?.paymentId, 'hYy9pRFVxpDsO1FB05SunFWUe9JZY');
    assert.equal(adapted.byPayment?.eventIdPrefix, 'square:');
    const resolved = adapted.byPayment!.withShipment('SHP-4821');
    assert.ok(resolved.kind === 'payment', JSON.stringify(resolved));
    assert.equal(resolved.eventId, adapted.eventId);
    assert.deepEqual(
      [
        resolved.event.type,
        resolved.event.data.shipment_id,
        resolved.event.data.payment_id,
        resolved.event.data.amount,
      ],
      ['payment.refunded', 'SHP-4821', 'hYy9pRFVxpDsO1FB05SunFWUe9JZY', 100],
    );
  });

  test('a refund that carries a reference is a refund of its payment, apart from the payment update', () => {
    // Only the shipment is added, where a payment keeps it: everything else is Square's refund.
    const refund = edited('refund.updated-completed', {
      '/data/object/payment': { reference_id: 'SHP-4821' },
    });
    const adapted = createHmacAdapter(SQUARE_SPEC, { keys: [] }).adapt(refund);
    assert.ok(adapted.kind === 'payment', JSON.stringify(adapted));
    assert.equal(adapted.event.type, 'payment.refunded');
    assert.equal(adapted.event.data.payment_id, 'hYy9pRFVxpDsO1FB05SunFWUe9JZY');
    assert.equal(
      adapted.event.data.refund_id,
      'square:hYy9pRFVxpDsO1FB05SunFWUe9JZY_KlWP8IC1557ddwc9QWTKrCVU6m0JXDz15R2Qym5eQfR',
    );
    assert.notEqual(adapted.eventId, 'square:6a8f5f28-54a1-4eb0-a98a-3111513fd4fc');
  });

  test('a status the table does not list changes nothing: ignored, naming the status', () => {
    const adapter = createHmacAdapter(SQUARE_SPEC, { keys: [] });
    const pending = edited('payment.updated-completed', { '/data/object/payment/status': 'PENDING' });
    assert.deepEqual(adapter.adapt(pending), {
      kind: 'ignored',
      eventId: 'square:6a8f5f28-54a1-4eb0-a98a-3111513fd4fc',
      providerType: 'payment.updated:PENDING',
      reason: 'a payment.updated with status PENDING changes nothing',
    });
    const refund = edited('refund.updated-completed', { '/data/object/refund/status': 'REJECTED' });
    assert.equal(adapter.adapt(refund).kind, 'ignored');
  });

  test('CANCELED and FAILED payments are failures', () => {
    const adapter = createHmacAdapter(SQUARE_SPEC, { keys: [] });
    for (const status of ['CANCELED', 'FAILED']) {
      const event = edited('payment.updated-completed', { '/data/object/payment/status': status });
      const adapted = adapter.adapt(event);
      assert.ok(adapted.kind === 'payment');
      assert.equal(adapted.event.type, 'payment.failed');
    }
  });

  test('no reference_id on a payment: unmatched', () => {
    const event = edited('payment.updated-completed', { '/data/object/payment/reference_id': undefined });
    assert.equal(createHmacAdapter(SQUARE_SPEC, { keys: [] }).adapt(event).kind, 'unmatched');
  });
});

describe('Square requests refused', () => {
  const key = newKey();
  const body = fixtureText('payment.updated-completed');
  const header = 'x-square-hmacsha256-signature';

  const refusal = async (candidate: string, headers: Record<string, string>, keys = [key]) => {
    const verified = await verify(candidate, headers, keys);
    assert.ok(!verified.ok, JSON.stringify(verified));
    return verified;
  };

  test('a signature made with another key', async () => {
    assert.equal((await refusal(body, { [header]: squareSignature(URL, body, newKey()) })).kind, 'signature');
  });

  test('a body changed after signing', async () => {
    const changed = body.replace('"SHP-4821"', '"SHP-4822"');
    assert.notEqual(changed, body);
    assert.equal((await refusal(changed, { [header]: squareSignature(URL, body, key) })).kind, 'signature');
  });

  test('no signature header, or a garbled one', async () => {
    assert.match((await refusal(body, {})).reason, /missing x-square-hmacsha256-signature header/);
    const right = squareSignature(URL, body, key);
    for (const garbled of ['%%%', right.slice(0, 20), Buffer.from(right, 'base64').toString('hex')]) {
      assert.equal((await refusal(body, { [header]: garbled })).kind, 'signature', garbled);
    }
  });

  test('the old x-square-signature (HMAC-SHA1) header is not accepted in its place', async () => {
    const sha1 = createHmac('sha1', key)
      .update(URL + body)
      .digest('base64');
    assert.equal((await refusal(body, { 'x-square-signature': sha1 })).kind, 'signature');
  });

  test('a refusal names the field where Square keeps it', () => {
    const adapter = createHmacAdapter(SQUARE_SPEC, { keys: [] });
    const event = edited('payment.updated-completed', {
      '/data/object/payment/amount_money/currency': 'usd',
    });
    assert.deepEqual(adapter.adapt(event), {
      kind: 'invalid',
      eventId: 'square:6a8f5f28-54a1-4eb0-a98a-3111513fd4fc',
      path: 'data.object.payment.amount_money.currency',
      message: 'must be a currency code ISO 4217 lists',
    });
    const noStatus = edited('payment.updated-completed', { '/data/object/payment/status': undefined });
    const adapted = adapter.adapt(noStatus);
    assert.ok(adapted.kind === 'invalid');
    assert.equal(adapted.path, 'data.object.payment.status');
    const noId = edited('payment.updated-completed', { '/event_id': undefined });
    const withoutId = adapter.adapt(noId);
    assert.ok(withoutId.kind === 'invalid');
    assert.equal(withoutId.path, 'event_id');
  });
});

describe('Square key rotation and configuration', () => {
  test('either of SETTLE_SQUARE_SIGNATURE_KEYS verifies', async () => {
    const [current, next] = [newKey(), newKey()];
    const body = fixtureText('payment.updated-completed');
    for (const key of [current, next]) {
      const verified = await verify(
        body,
        { 'x-square-hmacsha256-signature': squareSignature(URL, body, key) },
        [current, next],
      );
      assert.equal(verified.ok, true);
    }
  });

  test('square-environment states the mode SETTLE_PROVIDER_MODE reads; an export line states none', async () => {
    const key = newKey();
    const body = fixtureText('payment.updated-completed');
    const signed = { 'x-square-hmacsha256-signature': squareSignature(URL, body, key) };
    const modeWith = async (environment?: string) => {
      const headers = environment === undefined ? signed : { ...signed, 'square-environment': environment };
      const verified = await verify(body, headers, [key]);
      assert.ok(verified.ok);
      return verified.mode;
    };
    assert.equal(await modeWith('Production'), 'live');
    assert.equal(await modeWith('Sandbox'), 'test');
    assert.equal(await modeWith(), undefined);
    assert.equal(await modeWith('Staging'), undefined);
    assert.equal(
      createHmacAdapter(SQUARE_SPEC, { keys: [] }).exportMode(fixture('payment.updated-completed')),
      undefined,
    );
  });

  test('keys without SETTLE_SQUARE_NOTIFICATION_URL do not build an adapter', () => {
    assert.throws(
      () => createHmacAdapter(SQUARE_SPEC, { keys: [newKey()] }),
      /SETTLE_SQUARE_NOTIFICATION_URL/,
    );
  });

  test('the spec names its route and variables, for the registry to wire', () => {
    assert.equal(SQUARE_SPEC.route, '/webhooks/square');
    assert.deepEqual(SQUARE_SPEC.variables, {
      keys: 'SETTLE_SQUARE_SIGNATURE_KEYS',
      notificationUrl: 'SETTLE_SQUARE_NOTIFICATION_URL',
    });
  });
});
