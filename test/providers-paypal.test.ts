import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { recoverMissedEvents } from '../src/app/recovery-missed-events';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { providerRouteOptions } from '../src/gateway/providers';
import { buildGateway } from '../src/gateway/server';
import pino from 'pino';
import { shortHash } from '../src/lib/hash';
import { providerDeliveriesRefusedTotal } from '../src/metrics/settle-metrics';
import { createPaypalAdapter } from '../src/providers/paypal/adapter';
import { createPaypalRecoverySource } from '../src/providers/paypal/recovery-source';
import { RecoveryFault } from '../src/providers/recovery-source';
import { countRows, startTestStack, uniqueId, waitFor, type TestStack } from '../testkit/harness';
import { forceCrc32, PAD_PLACEHOLDER } from './support/crc32-twin';
import {
  createPaypalCertificates,
  paypalCapture,
  paypalEvent,
  paypalRefund,
  signPaypal,
  startPaypalApi,
  type PaypalApi,
  type PaypalCertificates,
} from '../testkit/paypal-api';
import { ledgerOf, paymentStatusOf, type Reply } from './support/providers';
import { runSettle, stackEnv } from './support/settle-cli';

const webhookId = '1JE4291016473214C';
let certs: PaypalCertificates;
/** PayPal's API as the gateway confirms delivered events with it (the stack's SETTLE_PAYPAL_API_BASE). */
let api: PaypalApi;
/** PayPal's API as the recovery tests list it: a stand-in of its own, so their windows hold only their events. */
let listing: PaypalApi;
let stack: TestStack;
let certPath: string;

before(async () => {
  certs = await createPaypalCertificates();
  api = await startPaypalApi({ certificates: certs });
  listing = await startPaypalApi({ certificates: certs });
  certPath = join(mkdtempSync(join(tmpdir(), 'settle-paypal-')), 'paypal-cert.pem');
  writeFileSync(certPath, certs.paypal.cert);
  stack = await startTestStack({
    config: {
      paypalWebhookId: webhookId,
      paypalCertPath: certPath,
      paypalClientId: api.clientId,
      paypalClientSecret: api.clientSecret,
      paypalApiBase: api.url,
    },
  });
});
after(async () => {
  await stack.close();
  await api.close();
  await listing.close();
});

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

async function postPaypal(
  body: string,
  headers: Record<string, string> = signPaypal(body, { webhookId, key: certs.paypal.key }),
  gatewayUrl = stack.gatewayUrl,
): Promise<Reply> {
  const response = await fetch(`${gatewayUrl}/webhooks/paypal`, { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: JSON.parse(text) as Record<string, unknown>,
    headers: response.headers,
  };
}

/** Delivers an event as PayPal does: PayPal's API has it, and it is posted signed. */
async function deliver(event: Record<string, unknown>): Promise<Reply> {
  api.add(event);
  return postPaypal(JSON.stringify(event));
}

async function nothingWritten(eventId: string) {
  assert.equal(await countRows(stack.pool, 'events', eventId), 0);
  assert.equal(await countRows(stack.pool, 'claims', eventId), 0);
}

/** No trace of an event: no row, no claim, no workflow run under its ID. */
async function noEffectOf(eventId: string) {
  await nothingWritten(eventId);
  await assert.rejects(
    stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe(),
    WorkflowNotFoundError,
  );
}

/**
 * A CRC32 twin of a captured delivery's body: another event ID, the shipment of the forger's
 * choosing, the same amount, and a 12-character pad field chosen so that the CRC32 is the original's.
 */
function crc32Twin(original: string, changes: { id?: string; shipmentId: string }): string {
  const event = JSON.parse(original) as Record<string, unknown>;
  const resource = event.resource as Record<string, unknown>;
  const twin = JSON.stringify({
    ...event,
    id: changes.id ?? `WH-${uniqueId('TWIN').toUpperCase()}`,
    resource: { ...resource, custom_id: changes.shipmentId },
    pad: PAD_PLACEHOLDER,
  });
  const forged = forceCrc32(twin, crc32(Buffer.from(original)) >>> 0);
  assert.equal(crc32(Buffer.from(forged)) >>> 0, crc32(Buffer.from(original)) >>> 0);
  assert.notEqual(forged, original);
  return forged;
}

async function refusedCount(reason: string): Promise<number> {
  const metric = await providerDeliveriesRefusedTotal.get();
  return metric.values.find((v) => v.labels.provider === 'paypal' && v.labels.reason === reason)?.value ?? 0;
}

/**
 * A second gateway on the stack's database and task queue, as settle runs without PayPal API
 * credentials, fetching certificates from the stand-in (PayPal's chain, a trusted test root).
 */
async function gatewayWithoutApi(): Promise<{ url: string; app: FastifyInstance; logs: string[] }> {
  const logs: string[] = [];
  const captured = pino({ level: 'warn' }, { write: (line: string) => void logs.push(line) });
  const app = buildGateway({
    pool: stack.pool,
    client: stack.client,
    taskQueue: stack.taskQueue,
    webhookSecrets: stack.config.webhookSecrets,
    ...providerRouteOptions({ ...stack.config, paypalCertPath: undefined, paypalClientId: undefined }),
    providerTesting: { paypal: { certOrigin: api.url, trustedCas: [certs.ca] } },
    apiToken: stack.apiToken,
    logger: captured,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, app, logs };
}

describe('POST /webhooks/paypal', () => {
  test('a signed PAYMENT.CAPTURE.COMPLETED captures the shipment once; its refund refunds it', async () => {
    const shipmentId = await newShipment();
    const capture = paypalCapture(shipmentId, '42.50', 'EUR');
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', capture);
    const body = JSON.stringify(event);

    api.add(event);
    const accepted = await postPaypal(body);
    assert.equal(accepted.status, 202, accepted.text);
    assert.equal(accepted.body.event_id, event.id);
    const run = await stack.client.workflow.getHandle(paymentWorkflowId(String(event.id))).result();
    assert.equal((run as { outcome: string }).outcome, 'applied');
    assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((e) => [e.kind, e.amount, e.currency]),
      [['capture', 4250, 'EUR']],
    );

    // PayPal's retry of the same delivery (a new transmission of the same event): a duplicate.
    const again = await postPaypal(body);
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'duplicate');

    const refund = paypalEvent('PAYMENT.CAPTURE.REFUNDED', paypalRefund(capture.id, shipmentId, '42.50'));
    assert.equal((await deliver(refund)).status, 202);
    await waitFor('the refund applied', () => paymentStatusOf(stack, shipmentId), {
      until: (status) => status === 'refunded',
    });
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((e) => [e.kind, e.amount]),
      [
        ['capture', 4250],
        ['refund', 4250],
      ],
    );
  });

  test('a capture whose resource has no custom_id is unmatched (200), an exception; nothing runs', async () => {
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(undefined));
    const answer = await deliver(event);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.status, 'unmatched');
    assert.match(String(answer.body.message), /custom_id/);
    await nothingWritten(String(event.id));
  });

  test('what the signature does not vouch for is refused with 401 and writes nothing', async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId));
    const body = JSON.stringify(event);
    const cases: [string, Record<string, string>, string, RegExp][] = [
      [
        'another webhook',
        signPaypal(body, { webhookId: 'OTHERWEBHOOK1', key: certs.paypal.key }),
        body,
        /does not match/,
      ],
      [
        'a changed body',
        signPaypal(body, { webhookId, key: certs.paypal.key }),
        body.replace('42.00', '4.00'),
        /does not match/,
      ],
      ['another key', signPaypal(body, { webhookId, key: certs.forged.key }), body, /does not match/],
      [
        'an old transmission',
        signPaypal(body, { webhookId, key: certs.paypal.key, time: new Date(Date.now() - 10 * 60_000) }),
        body,
        /tolerance/,
      ],
      [
        'a certificate URL off PayPal',
        signPaypal(body, {
          webhookId,
          key: certs.paypal.key,
          certUrl: 'https://paypal.com.evil.example/v1/notifications/certs/CERT-1',
        }),
        body,
        /PAYPAL-CERT-URL must be/,
      ],
      [
        'an http certificate URL',
        signPaypal(body, {
          webhookId,
          key: certs.paypal.key,
          certUrl: 'http://api.paypal.com/v1/notifications/certs/CERT-1',
        }),
        body,
        /PAYPAL-CERT-URL must be/,
      ],
      [
        'another algorithm',
        { ...signPaypal(body, { webhookId, key: certs.paypal.key }), 'paypal-auth-algo': 'SHA1withRSA' },
        body,
        /PAYPAL-AUTH-ALGO/,
      ],
    ];
    for (const [name, headers, sent, reason] of cases) {
      const answer = await postPaypal(sent, headers);
      assert.equal(answer.status, 401, `${name}: ${answer.text}`);
      assert.equal(answer.body.error, 'invalid_signature', name);
      assert.match(String(answer.body.message), reason, name);
    }
    const unsigned = signPaypal(body, { webhookId, key: certs.paypal.key });
    delete unsigned['paypal-transmission-sig'];
    const missing = await postPaypal(body, unsigned);
    assert.equal(missing.status, 401);
    assert.match(String(missing.body.message), /PAYPAL-TRANSMISSION-SIG/);
    await nothingWritten(String(event.id));
  });
});

describe('a body forged to the same CRC32 under a captured delivery takes no effect', () => {
  /** A genuine capture of `shipmentId` and the headers PayPal sent it with (as an ingress log holds them). */
  function genuineDelivery(shipmentId: string) {
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, '42.00', 'EUR'));
    const body = JSON.stringify(event);
    return { event, body, headers: signPaypal(body, { webhookId, key: certs.paypal.key }) };
  }

  /** The forger's shipment: still held, no ledger entry. */
  async function stillHeld(shipmentId: string) {
    assert.equal(await paymentStatusOf(stack, shipmentId), 'pending');
    assert.deepEqual(await ledgerOf(stack, shipmentId), []);
  }

  test("with PayPal's API: the twin's event is not PayPal's (422); the genuine delivery again is a duplicate", async () => {
    const paid = await newShipment();
    const chosen = await newShipment();
    const genuine = genuineDelivery(paid);
    api.add(genuine.event);
    assert.equal((await postPaypal(genuine.body, genuine.headers)).status, 202);

    const twin = crc32Twin(genuine.body, { shipmentId: chosen });
    const twinId = String((JSON.parse(twin) as { id: string }).id);
    const before = await refusedCount('event_not_confirmed');
    const refused = await postPaypal(twin, genuine.headers);
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error, 'event_not_confirmed');
    assert.equal(await refusedCount('event_not_confirmed'), before + 1);
    // PayPal's API was asked for the twin's event ID.
    assert.ok(api.requests.some((r) => r.path === `/v1/notifications/webhooks-events/${twinId}`));

    await waitFor('the genuine capture applied', () => paymentStatusOf(stack, paid), {
      until: (status) => status === 'captured',
    });
    await noEffectOf(twinId);
    await stillHeld(chosen);
    const again = await postPaypal(genuine.body, genuine.headers);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.status, 'duplicate');
  });

  test('raced ahead of the genuine delivery, a twin keeping its event ID is refused and does not use up the transmission', async () => {
    const paid = await newShipment();
    const chosen = await newShipment();
    const genuine = genuineDelivery(paid);
    api.add(genuine.event);
    const twin = crc32Twin(genuine.body, { id: String(genuine.event.id), shipmentId: chosen });

    const refused = await postPaypal(twin, genuine.headers);
    assert.equal(refused.status, 422, refused.text);
    assert.match(String(refused.body.message), /data\.shipment_id/);
    await noEffectOf(String(genuine.event.id));

    const accepted = await postPaypal(genuine.body, genuine.headers);
    assert.equal(accepted.status, 202, accepted.text);
    await waitFor('the genuine capture applied', () => paymentStatusOf(stack, paid), {
      until: (status) => status === 'captured',
    });
    await stillHeld(chosen);
  });

  test("without PayPal's API: the transmission is taken once, so the twin is 409 transmission_reused", async () => {
    const gateway = await gatewayWithoutApi();
    try {
      const paid = await newShipment();
      const chosen = await newShipment();
      const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(paid, '42.00', 'EUR'));
      const body = JSON.stringify(event);
      const certUrl = 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-0a1b-good';
      const headers = signPaypal(body, { webhookId, key: certs.paypal.key, certUrl });
      assert.equal((await postPaypal(body, headers, gateway.url)).status, 202);

      for (const twin of [
        crc32Twin(body, { shipmentId: chosen }),
        crc32Twin(body, { id: String(event.id), shipmentId: chosen }),
      ]) {
        const before = await refusedCount('transmission_reused');
        const refused = await postPaypal(twin, headers, gateway.url);
        assert.equal(refused.status, 409, refused.text);
        assert.equal(refused.body.error, 'transmission_reused');
        assert.equal(await refusedCount('transmission_reused'), before + 1);
        const twinId = String((JSON.parse(twin) as { id: string }).id);
        if (twinId !== String(event.id)) await noEffectOf(twinId);
      }
      // The residual risk is said at start; the refusals are logged by short hashes only.
      assert.ok(gateway.logs.some((line) => /CRC32.*SETTLE_PAYPAL_CLIENT_ID/.test(line)));
      const refusals = gateway.logs.filter((line) => line.includes('another body'));
      assert.equal(refusals.length, 2);
      for (const line of refusals) {
        assert.ok(line.includes(shortHash(headers['paypal-transmission-id']!)), line);
        assert.ok(
          !line.includes(headers['paypal-transmission-id']!) && !line.includes(String(event.id)),
          line,
        );
      }
      const { rows } = await stack.pool.query<{ refused_bodies: number }>(
        `SELECT refused_bodies FROM provider_transmissions WHERE provider = 'paypal' AND transmission_id = $1`,
        [headers['paypal-transmission-id']],
      );
      assert.deepEqual(rows, [{ refused_bodies: 2 }]);

      await waitFor('the genuine capture applied', () => paymentStatusOf(stack, paid), {
        until: (status) => status === 'captured',
      });
      assert.deepEqual(
        (await ledgerOf(stack, paid)).map((e) => [e.kind, e.amount, e.event_id]),
        [['capture', 4200, event.id]],
      );
      await stillHeld(chosen);
      // The genuine body under its own transmission again: the ordinary duplicate answer.
      const again = await postPaypal(body, headers, gateway.url);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.status, 'duplicate');
    } finally {
      await gateway.app.close();
    }
  });

  test("PayPal's API not answering is a 503 with Retry-After and nothing admitted; PayPal's retry is applied", async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId));
    api.add(event);
    const body = JSON.stringify(event);
    const headers = signPaypal(body, { webhookId, key: certs.paypal.key });
    for (const fault of [{ status: 503, retryAfter: '7' }, { status: 429 }, { status: 500 }] as const) {
      api.failNext(fault);
      const answer = await postPaypal(body, headers);
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.body.error, 'provider_unavailable');
      assert.ok(Number(answer.headers.get('retry-after')) >= 1);
      if ('retryAfter' in fault) assert.equal(answer.headers.get('retry-after'), '7');
      await nothingWritten(String(event.id));
    }
    const accepted = await postPaypal(body, headers);
    assert.equal(accepted.status, 202, accepted.text);
  });

  test('a PayPal certificate that cannot be fetched is a 503 with Retry-After, never 401', async () => {
    const gateway = await gatewayWithoutApi();
    try {
      const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(await newShipment()));
      const body = JSON.stringify(event);
      const headers = signPaypal(body, {
        webhookId,
        key: certs.paypal.key,
        certUrl: 'https://api.paypal.com/v1/notifications/certs/CERT-0a1b-unavailable',
      });
      const answer = await postPaypal(body, headers, gateway.url);
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.body.error, 'provider_unavailable');
      assert.ok(Number(answer.headers.get('retry-after')) >= 1);
      await nothingWritten(String(event.id));
    } finally {
      await gateway.app.close();
    }
  });
});

describe("PayPal's certificate, fetched", () => {
  const body = JSON.stringify(paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture('SHP-x')));
  const adapter = () => createPaypalAdapter({ webhookId, certOrigin: api.url, trustedCas: [certs.ca] });
  const at = (name: string) => `https://api.paypal.com/v1/notifications/certs/CERT-0a1b-${name}`;
  const verify = (a: ReturnType<typeof adapter>, name: string, key = certs.paypal.key) =>
    a.verify({ rawBody: body, headers: signPaypal(body, { webhookId, key, certUrl: at(name) }) });

  test("PayPal's certificate, chained to a trusted root, verifies and is fetched once", async () => {
    const a = adapter();
    const before = api.requests.filter((r) => r.path.includes('/certs/')).length;
    assert.deepEqual((await verify(a, 'good')).ok, true);
    assert.deepEqual((await verify(a, 'good')).ok, true);
    assert.equal(api.requests.filter((r) => r.path.includes('/certs/')).length - before, 1);
  });

  test('a forged, foreign, expired, oversized or hung certificate is refused', async () => {
    const a = adapter();
    const expected: [string, string, RegExp][] = [
      ['forged', certs.forged.key, /no trusted root/],
      ['stranger', certs.stranger.key, /not PayPal's/],
      ['expired', certs.paypal.key, /expired/],
      ['huge', certs.paypal.key, /larger than/],
    ];
    for (const [name, key, reason] of expected) {
      const verified = await verify(a, name, key);
      assert.equal(verified.ok, false, name);
      assert.match(verified.ok ? '' : verified.reason, reason, name);
    }
  });

  test('a chain whose issuer is no CA (basicConstraints CA:FALSE) is refused', async () => {
    const verified = await verify(adapter(), 'notCa', certs.notCa.key);
    assert.equal(verified.ok, false);
    assert.equal(!verified.ok && verified.kind, 'signature');
    assert.match(verified.ok ? '' : verified.reason, /not a CA/);
  });

  test('a certificate that cannot be fetched is unavailable (not a forgery), the failure kept briefly, keyed without the query', async () => {
    let clock = Date.now();
    const a = createPaypalAdapter({
      webhookId,
      certOrigin: api.url,
      trustedCas: [certs.ca],
      now: () => clock,
    });
    const fetches = () => api.requests.filter((r) => r.path.endsWith('-unavailable')).length;
    const before = fetches();
    for (const url of [at('unavailable'), `${at('unavailable')}?v=1`, `${at('unavailable')}?v=2#x`]) {
      const verified = await a.verify({
        rawBody: body,
        headers: signPaypal(body, { webhookId, key: certs.paypal.key, certUrl: url }),
      });
      assert.equal(verified.ok, false);
      assert.equal(!verified.ok && verified.kind, 'unavailable', url);
      assert.ok(!verified.ok && verified.kind === 'unavailable' && verified.retryAfterSeconds >= 1);
    }
    assert.equal(fetches() - before, 1, 'one fetch for the three deliveries');
    clock += 60_000;
    const later = await verify(a, 'unavailable');
    assert.equal(!later.ok && later.kind, 'unavailable');
    assert.equal(fetches() - before, 2, 'fetched again once the failure is no longer kept');

    // Nothing listening: a refused connection is unavailable too.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await createPaypalAdapter({
      webhookId,
      certOrigin: `http://127.0.0.1:${port}`,
      trustedCas: [certs.ca],
    }).verify({
      rawBody: body,
      headers: signPaypal(body, { webhookId, key: certs.paypal.key, certUrl: at('good') }),
    });
    assert.equal(!refused.ok && refused.kind, 'unavailable');
  });

  test("several webhook IDs verify (rotation); PayPal's simulator's WEBHOOK_ID only when listed", async () => {
    const rotated = createPaypalAdapter({
      webhookIds: ['OLDWEBHOOK0001', 'NEWWEBHOOK0002'],
      certOrigin: api.url,
      trustedCas: [certs.ca],
    });
    const signedFor = (id: string) =>
      rotated.verify({
        rawBody: body,
        headers: signPaypal(body, { webhookId: id, key: certs.paypal.key, certUrl: at('good') }),
      });
    assert.equal((await signedFor('OLDWEBHOOK0001')).ok, true);
    assert.equal((await signedFor('NEWWEBHOOK0002')).ok, true);
    assert.equal((await signedFor('WEBHOOK_ID')).ok, false);
    assert.equal((await signedFor('OTHERWEBHOOK03')).ok, false);
    const simulator = createPaypalAdapter({
      webhookIds: ['WEBHOOK_ID'],
      certOrigin: api.url,
      trustedCas: [certs.ca],
    });
    const verified = await simulator.verify({
      rawBody: body,
      headers: signPaypal(body, { webhookId: 'WEBHOOK_ID', key: certs.paypal.key, certUrl: at('good') }),
    });
    assert.equal(verified.ok, true);
  });

  test("the mode is the event's own host (signed), else the certificate URL's", async () => {
    const a = adapter();
    for (const [sandbox, mode] of [
      [true, 'test'],
      [false, 'live'],
    ] as const) {
      const sent = JSON.stringify(
        paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture('SHP-m'), { sandbox }),
      );
      const verified = await a.verify({
        rawBody: sent,
        headers: signPaypal(sent, { webhookId, key: certs.paypal.key, certUrl: at('good') }),
      });
      assert.deepEqual(verified.ok && verified.mode, mode);
    }
    const linkless = JSON.stringify({
      ...paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture('SHP-m')),
      links: [],
    });
    const sandboxCert = 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-0a1b-good';
    const verified = await a.verify({
      rawBody: linkless,
      headers: signPaypal(linkless, { webhookId, key: certs.paypal.key, certUrl: sandboxCert }),
    });
    assert.deepEqual(verified.ok && verified.mode, 'test');
  });

  test('the test-only fetch origin cannot leave this machine', () => {
    assert.throws(() =>
      createPaypalAdapter({ webhookId, certOrigin: 'https://api.paypal.com.evil.example' }),
    );
  });
});

describe("recovery from PayPal's webhook-events API", () => {
  test('events never delivered are admitted once, oldest first across pages, through 429 and 503', async () => {
    const start = Date.now() - 30 * 60_000;
    const shipments: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const shipmentId = await newShipment();
      const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, `1${i}.00`, 'USD'), {
        createTime: new Date(start + i * 1000),
      });
      listing.add(event);
      shipments.push(shipmentId);
      ids.push(String(event.id));
    }
    // A type settle does not act on is not counted.
    listing.add(paypalEvent('CHECKOUT.ORDER.APPROVED', {}, { createTime: new Date(start + 10_000) }));
    // A delivered one (by webhook) is a duplicate when listed.
    const deliveredShipment = await newShipment();
    const delivered = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(deliveredShipment), {
      createTime: new Date(start + 20_000),
    });
    assert.equal((await deliver(delivered)).status, 202);
    listing.add(delivered);

    listing.failNext({ status: 429, retryAfter: '1' }, { status: 503 });
    const source = createPaypalRecoverySource({
      clientId: listing.clientId,
      clientSecret: listing.clientSecret,
      apiBase: listing.url,
      pageSize: 2,
    });
    const retries: string[] = [];
    const summary = await recoverMissedEvents(stack, source, {
      since: new Date(start - 1000),
      retry: { attempts: 3, initialDelayMs: 50, onRetry: (fault) => retries.push(fault.kind) },
    });
    assert.deepEqual(retries, ['rate_limited', 'unavailable']);
    assert.deepEqual(
      {
        listed: summary.listed,
        admitted: summary.admitted,
        already_had: summary.already_had,
        retries: summary.retries,
      },
      { listed: 6, admitted: 5, already_had: 1, retries: { used: 2, limit: 3 } },
    );
    // Paged: more than one events request, each after the first by PayPal's next link.
    assert.ok(listing.requests.filter((r) => r.query.has('page')).length >= 2);
    for (const [i, shipmentId] of shipments.entries()) {
      await waitFor(`capture ${i} applied`, () => paymentStatusOf(stack, shipmentId), {
        until: (status) => status === 'captured',
      });
      assert.deepEqual(
        (await ledgerOf(stack, shipmentId)).map((e) => [e.kind, e.amount, e.event_id]),
        [['capture', 1000 + i * 100, ids[i]]],
      );
    }
    // Again: everything is a duplicate, nothing starts.
    const again = await recoverMissedEvents(stack, source, { since: new Date(start - 1000) });
    assert.equal(again.admitted, 0);
    assert.equal(again.already_had, 6);
  });

  test('a sandbox event listed under SETTLE_PROVIDER_MODE=live is ignored and writes nothing', async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId), {
      // Outside the window of the `settle recover` test below, which takes every mode.
      createTime: new Date(Date.now() - 20 * 60_000),
      sandbox: true,
    });
    listing.add(event);
    const source = createPaypalRecoverySource({
      clientId: listing.clientId,
      clientSecret: listing.clientSecret,
      apiBase: listing.url,
    });
    const summary = await recoverMissedEvents(stack, source, {
      since: new Date(Date.now() - 21 * 60_000),
      providerMode: 'live',
      dryRun: false,
    });
    assert.equal(summary.admitted, 0);
    assert.ok(summary.ignored >= 1);
    await nothingWritten(String(event.id));
  });

  test('refused credentials end the listing as unauthorized', async () => {
    const source = createPaypalRecoverySource({
      clientId: listing.clientId,
      clientSecret: 'x'.repeat(40),
      apiBase: listing.url,
    });
    await assert.rejects(
      recoverMissedEvents(stack, source, { since: new Date(Date.now() - 60_000), dryRun: true }),
      (error) => error instanceof RecoveryFault && error.kind === 'unauthorized',
    );
  });

  test('settle recover --provider paypal admits what PayPal lists, through a run of 429s', async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, '9.99', 'USD'), {
      createTime: new Date(Date.now() - 5 * 60_000),
    });
    listing.add(event);
    listing.failNext({ status: 429, retryAfter: '1' }, { status: 429, retryAfter: '1' });
    const run = await runSettle(
      ['recover', '--provider', 'paypal', '--since', '10m', '--json'],
      stackEnv(stack, {
        SETTLE_PAYPAL_CLIENT_ID: listing.clientId,
        SETTLE_PAYPAL_CLIENT_SECRET: listing.clientSecret,
        SETTLE_PAYPAL_API_BASE: listing.url,
      }),
    );
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { admitted: number; retries: { used: number; limit: number } };
    assert.equal(summary.admitted, 1);
    assert.deepEqual(summary.retries, { used: 2, limit: 10 });
    await waitFor('the recovered capture applied', () => paymentStatusOf(stack, shipmentId), {
      until: (status) => status === 'captured',
    });
  });
});
