import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { recoverMissedEvents } from '../src/app/recovery';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { createPaypalAdapter } from '../src/providers/paypal';
import { createPaypalRecoverySource } from '../src/providers/paypal-recovery';
import { RecoveryFault } from '../src/providers/recovery';
import { countRows, startTestStack, uniqueId, waitFor, type TestStack } from '../tools/harness/harness';
import {
  createPaypalCertificates,
  paypalCapture,
  paypalEvent,
  paypalRefund,
  signPaypal,
  startPaypalApi,
  type PaypalApi,
  type PaypalCertificates,
} from '../tools/harness/paypal-api';
import { ledgerOf, paymentStatusOf, type Reply } from './support/providers';
import { runSettle, stackEnv } from './support/settle-cli';

const webhookId = '1JE4291016473214C';
let certs: PaypalCertificates;
let api: PaypalApi;
let stack: TestStack;
let certPath: string;

before(async () => {
  certs = await createPaypalCertificates();
  api = await startPaypalApi({ certificates: certs });
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
});

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

async function postPaypal(
  body: string,
  headers: Record<string, string> = signPaypal(body, { webhookId, key: certs.paypal.key }),
): Promise<Reply> {
  const response = await fetch(`${stack.gatewayUrl}/webhooks/paypal`, { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: JSON.parse(text) as Record<string, unknown>,
    headers: response.headers,
  };
}

async function nothingWritten(eventId: string) {
  assert.equal(await countRows(stack.pool, 'events', eventId), 0);
  assert.equal(await countRows(stack.pool, 'claims', eventId), 0);
}

describe('POST /webhooks/paypal', () => {
  test('a signed PAYMENT.CAPTURE.COMPLETED captures the shipment once; its refund refunds it', async () => {
    const shipmentId = await newShipment();
    const capture = paypalCapture(shipmentId, '42.50', 'EUR');
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', capture);
    const body = JSON.stringify(event);

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
    assert.equal((await postPaypal(JSON.stringify(refund))).status, 202);
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
    const answer = await postPaypal(JSON.stringify(event));
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
      api.add(event);
      shipments.push(shipmentId);
      ids.push(String(event.id));
    }
    // A type settle does not act on is not counted.
    api.add(paypalEvent('CHECKOUT.ORDER.APPROVED', {}, { createTime: new Date(start + 10_000) }));
    // A delivered one (by webhook) is a duplicate when listed.
    const deliveredShipment = await newShipment();
    const delivered = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(deliveredShipment), {
      createTime: new Date(start + 20_000),
    });
    assert.equal((await postPaypal(JSON.stringify(delivered))).status, 202);
    api.add(delivered);

    api.failNext({ status: 429, retryAfter: '1' }, { status: 503 });
    const source = createPaypalRecoverySource({
      clientId: api.clientId,
      clientSecret: api.clientSecret,
      apiBase: api.url,
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
    assert.ok(api.requests.filter((r) => r.query.has('page')).length >= 2);
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
    api.add(event);
    const source = createPaypalRecoverySource({
      clientId: api.clientId,
      clientSecret: api.clientSecret,
      apiBase: api.url,
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
      clientId: api.clientId,
      clientSecret: 'x'.repeat(40),
      apiBase: api.url,
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
    api.add(event);
    api.failNext({ status: 429, retryAfter: '1' }, { status: 429, retryAfter: '1' });
    const run = await runSettle(
      ['recover', '--provider', 'paypal', '--since', '10m', '--json'],
      stackEnv(stack, {
        SETTLE_PAYPAL_CLIENT_ID: api.clientId,
        SETTLE_PAYPAL_CLIENT_SECRET: api.clientSecret,
        SETTLE_PAYPAL_API_BASE: api.url,
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
