import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import type { ImportSummary } from '../src/app/import';
import { PROJECT_ROOT } from '../src/lib/paths';
import type { SimulateSummary } from '../src/stack/simulate';
import { freePort } from '../testkit/free-port';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import {
  adyenBatch,
  adyenItem,
  ledgerOf,
  newAdyenKey,
  newHmacKey,
  newStripeSecret,
  paymentIntent,
  paymentStatusOf,
  signAdyen,
  stripeEvent,
} from './support/providers';
import { finished, runSettle, spawnSettle, stackEnv, watchOutput } from './support/settle-cli';
import Stripe from 'stripe';

/**
 * Each provider configured alone: a `settle gateway` process with only that provider's variables (no
 * Standard Webhooks secret, no other provider's), over one test stack's database, Temporal and worker.
 * It must start and take that provider's signed event end to end: applied once, the shipment released
 * once. PayPal alone has its own file (providers-paypal-alone.test.ts: certificates of its own).
 * Checkout.com and Square, the HMAC providers, also answer a duplicate, a wrong signature and a body
 * settle cannot read as their specs say, and take `settle import` and `settle simulate`.
 */
const stripeSecret = newStripeSecret();
const adyenKey = newAdyenKey();
const adyenAuth = `adyen:${newStripeSecret()}`;
const checkoutKey = newHmacKey();
const squareKey = newHmacKey();
/** What the Square subscription is configured with: part of what Square signs. */
const squareUrl = 'https://settle.example.com/hooks/square';

/** Each provider's variables, and nothing else. */
const ALONE = {
  stripe: { SETTLE_STRIPE_WEBHOOK_SECRETS: stripeSecret },
  adyen: { SETTLE_ADYEN_HMAC_KEYS: adyenKey, SETTLE_ADYEN_BASIC_AUTH: adyenAuth },
  checkout: { SETTLE_CHECKOUT_WEBHOOK_SECRETS: checkoutKey },
  square: { SETTLE_SQUARE_SIGNATURE_KEYS: squareKey, SETTLE_SQUARE_NOTIFICATION_URL: squareUrl },
} satisfies Record<string, NodeJS.ProcessEnv>;
type Alone = keyof typeof ALONE;

let carrier: Receiver;
let stack: TestStack;
const gateways = new Map<Alone, { url: string; env: NodeJS.ProcessEnv; stop(): Promise<void> }>();

/** `settle gateway` with only `provider`'s variables; resolves once it answers /healthz. */
async function startGatewayAlone(provider: Alone): Promise<void> {
  const port = await freePort();
  const env = stackEnv(stack, {
    // Unset: the Standard Webhooks secret the stack's environment would bring.
    SETTLE_WEBHOOK_SECRETS: '',
    PORT: String(port),
    SETTLE_METRICS_PORT: '0',
    ...ALONE[provider],
  });
  const gateway = spawnSettle(['gateway'], env);
  const output = watchOutput(gateway);
  const exited = finished(gateway);
  const url = `http://127.0.0.1:${port}`;
  gateways.set(provider, {
    url,
    env,
    async stop() {
      gateway.kill('SIGTERM');
      await exited.catch(() => undefined);
    },
  });
  await output.waitForOutput(`the ${provider} gateway to listen`, () =>
    output.text.includes('gateway listening'),
  );
  await waitFor(
    `the ${provider} gateway`,
    async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok,
  );
}

before(async () => {
  carrier = await startReceiver();
  stack = await startTestStack({ config: { carrierUrl: carrier.url } });
  await Promise.all((Object.keys(ALONE) as Alone[]).map(startGatewayAlone));
});
after(async () => {
  await Promise.all([...gateways.values()].map((gateway) => gateway.stop()));
  await stack?.close();
  await carrier?.close();
});

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

type Answer = { status: number; body: Record<string, unknown> };

async function post(provider: Alone, body: string, headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(`${gateways.get(provider)!.url}/webhooks/${provider}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text },
  };
}

/** Applied once: captured, one capture in the ledger, the shipment released once. */
async function appliedOnce(shipmentId: string, amount: number, currency: string): Promise<void> {
  await waitFor('the carrier release', async () =>
    carrier.requests.some((request) => request.json.shipment_id === shipmentId),
  );
  assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
  assert.deepEqual(
    (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.currency]),
    [['capture', amount, currency]],
  );
  assert.equal(carrier.requests.filter((request) => request.json.shipment_id === shipmentId).length, 1);
}

/** The fields of the providers' events these tests change. */
type CheckoutEvent = {
  id: string;
  data: { id: string; reference: string; amount: unknown; currency: string };
};
type SquareRefund = {
  event_id: string;
  data: { object: { refund: { id: string; payment_id: string; amount_money: { amount: number } } } };
};
type SquareEvent = {
  event_id: string;
  data: {
    object: {
      payment: { id: string; reference_id: string; amount_money: { amount: unknown; currency: string } };
    };
  };
};

const fixture = <T>(provider: 'checkout' | 'square', name: string): T =>
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'src/providers', provider, 'fixtures', `${name}.json`), 'utf8'));

/** As Checkout.com signs: the hex HMAC-SHA256 of the raw body. */
const ckoSignature = (body: string, key = checkoutKey) =>
  createHmac('sha256', key).update(body).digest('hex');
/** As Square signs: the base64 HMAC-SHA256 of the notification URL followed by the raw body. */
const squareSignature = (body: string, url = squareUrl, key = squareKey) =>
  createHmac('sha256', key)
    .update(url + body)
    .digest('base64');

function checkoutCapture(shipmentId: string, amount = 4250): CheckoutEvent {
  const event = fixture<CheckoutEvent>('checkout', 'payment_captured');
  event.id = uniqueId('evt');
  event.data.id = uniqueId('pay');
  event.data.reference = shipmentId;
  event.data.amount = amount;
  return event;
}

function squareCompleted(shipmentId: string, amount = 4250): SquareEvent {
  const event = fixture<SquareEvent>('square', 'payment.updated-completed');
  event.event_id = uniqueId('sq');
  event.data.object.payment.id = uniqueId('sqpay');
  event.data.object.payment.reference_id = shipmentId;
  event.data.object.payment.amount_money = { amount, currency: 'USD' };
  return event;
}

describe('each provider configured alone starts and applies a signed event once', () => {
  test('Stripe', async () => {
    const shipmentId = await newShipment();
    const event = stripeEvent(
      'payment_intent.succeeded',
      paymentIntent(shipmentId, { amount: 4250, amount_received: 4250 }),
    );
    const body = JSON.stringify(event);
    const header = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
      payload: body,
      secret: stripeSecret,
    });
    const answer = await post('stripe', body, { 'stripe-signature': header });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    await appliedOnce(shipmentId, 4250, 'EUR');
  });

  test('Adyen', async () => {
    const shipmentId = await newShipment();
    const item = signAdyen(
      adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId, value: 4250 }),
      adyenKey,
    );
    const answer = await post('adyen', JSON.stringify(adyenBatch([item])), {
      authorization: `Basic ${Buffer.from(adyenAuth).toString('base64')}`,
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.text, '[accepted]');
    await appliedOnce(shipmentId, 4250, 'EUR');
  });

  test('Checkout.com: applied once; a duplicate is 200 duplicate; a wrong key 401; an unreadable field 400 naming it', async () => {
    const shipmentId = await newShipment();
    const event = checkoutCapture(shipmentId);
    const body = JSON.stringify(event);
    const accepted = await post('checkout', body, { 'cko-signature': ckoSignature(body) });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.event_id, `checkout:${event.id}`);
    await appliedOnce(shipmentId, 4250, 'EUR');

    // Checkout.com's retry of the same delivery.
    const again = await post('checkout', body, { 'cko-signature': ckoSignature(body) });
    assert.deepEqual([again.status, again.body.status], [200, 'duplicate']);

    const forged = await post('checkout', body, { 'cko-signature': ckoSignature(body, newHmacKey()) });
    assert.deepEqual([forged.status, forged.body.error], [401, 'invalid_signature']);
    const unsigned = await post('checkout', body, {});
    assert.deepEqual([unsigned.status, unsigned.body.error], [401, 'invalid_signature']);

    const bad = checkoutCapture(await newShipment());
    bad.data.currency = 'EURO';
    const badBody = JSON.stringify(bad);
    const refused = await post('checkout', badBody, { 'cko-signature': ckoSignature(badBody) });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_event');
    assert.deepEqual(
      (refused.body.issues as { path: string }[]).map((issue) => issue.path),
      ['data.currency'],
    );
    await assertNotAdmitted(`checkout:${bad.id}`);
    // Nothing of the refused or repeated deliveries took effect.
    assert.equal((await ledgerOf(stack, shipmentId)).length, 1);
  });

  test('Square: signed over the configured URL, applied once; a duplicate, a wrong key or URL, an unreadable field', async () => {
    const shipmentId = await newShipment();
    const event = squareCompleted(shipmentId);
    const body = JSON.stringify(event);
    const header = 'x-square-hmacsha256-signature';
    const accepted = await post('square', body, { [header]: squareSignature(body) });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.event_id, `square:${event.event_id}`);
    await appliedOnce(shipmentId, 4250, 'USD');

    const again = await post('square', body, { [header]: squareSignature(body) });
    assert.deepEqual([again.status, again.body.status], [200, 'duplicate']);

    // The same body and key over the URL the request came to, not the configured one: not Square's.
    const otherUrl = await post('square', body, {
      [header]: squareSignature(body, `${gateways.get('square')!.url}/webhooks/square`),
    });
    assert.deepEqual([otherUrl.status, otherUrl.body.error], [401, 'invalid_signature']);
    const forged = await post('square', body, { [header]: squareSignature(body, squareUrl, newHmacKey()) });
    assert.deepEqual([forged.status, forged.body.error], [401, 'invalid_signature']);

    const bad = squareCompleted(await newShipment());
    bad.data.object.payment.amount_money.amount = '42.50';
    const badBody = JSON.stringify(bad);
    const refused = await post('square', badBody, { [header]: squareSignature(badBody) });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_event');
    assert.deepEqual(
      (refused.body.issues as { path: string }[]).map((issue) => issue.path),
      ['data.object.payment.amount_money.amount'],
    );
    await assertNotAdmitted(`square:${bad.event_id}`);
    assert.equal((await ledgerOf(stack, shipmentId)).length, 1);
  });
});

describe('a Square refund, which names only its payment, refunds the shipment of that payment', () => {
  const header = 'x-square-hmacsha256-signature';
  const refundOf = (paymentId: string, amount: number): SquareRefund => {
    const refund = fixture<SquareRefund>('square', 'refund.updated-completed');
    refund.event_id = uniqueId('sqre');
    refund.data.object.refund.id = uniqueId('sqrefund');
    refund.data.object.refund.payment_id = paymentId;
    refund.data.object.refund.amount_money.amount = amount;
    return refund;
  };

  test('after its capture: applied once to that shipment; a redelivery is a duplicate', async () => {
    const shipmentId = await newShipment();
    const payment = squareCompleted(shipmentId, 3000);
    const paymentBody = JSON.stringify(payment);
    assert.equal((await post('square', paymentBody, { [header]: squareSignature(paymentBody) })).status, 202);
    await appliedOnce(shipmentId, 3000, 'USD');

    const refund = refundOf(payment.data.object.payment.id, 1000);
    const body = JSON.stringify(refund);
    const accepted = await post('square', body, { [header]: squareSignature(body) });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.event_id, `square:${refund.event_id}`);
    await waitFor('the refund', async () => (await paymentStatusOf(stack, shipmentId)) === 'refunded');
    const again = await post('square', body, { [header]: squareSignature(body) });
    assert.deepEqual([again.status, again.body.status], [200, 'duplicate']);
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.currency]),
      [
        ['capture', 3000, 'USD'],
        ['refund', 1000, 'USD'],
      ],
    );
  });

  test('of a payment settle has no capture of: unmatched, an exception naming the payment', async () => {
    const paymentId = uniqueId('sqpay');
    const refund = refundOf(paymentId, 1000);
    const body = JSON.stringify(refund);
    const answer = await post('square', body, { [header]: squareSignature(body) });
    assert.deepEqual([answer.status, answer.body.status], [200, 'unmatched']);
    const { rows } = await stack.pool.query<{ reason: string }>(
      'SELECT reason FROM provider_exceptions WHERE event_id = $1',
      [`square:${refund.event_id}`],
    );
    assert.match(rows[0]?.reason ?? '', new RegExp(`no capture of its payment ${paymentId}`));
    await assertNotAdmitted(`square:${refund.event_id}`);
  });

  test("a capture of the same payment ID from another provider's event is not Square's", async () => {
    // A Standard Webhooks capture whose payment ID is the one a Square refund names.
    const shipmentId = await newShipment();
    const paymentId = uniqueId('sqpay');
    const posted = await postWebhook(
      stack,
      paymentEvent({ type: 'payment.captured', shipmentId, paymentId }),
    );
    assert.equal(posted.status, 202);
    await waitFor('the capture', async () => (await ledgerOf(stack, shipmentId)).length === 1);
    const refund = refundOf(paymentId, 500);
    const body = JSON.stringify(refund);
    const answer = await post('square', body, { [header]: squareSignature(body) });
    assert.deepEqual([answer.status, answer.body.status], [200, 'unmatched']);
    assert.equal((await ledgerOf(stack, shipmentId)).length, 1);
  });
});

async function assertNotAdmitted(eventId: string): Promise<void> {
  const { rows } = await stack.pool.query('SELECT 1 FROM events WHERE event_id = $1', [eventId]);
  assert.equal(rows.length, 0, `${eventId} was admitted`);
}

describe('settle import and settle simulate take --provider checkout and square', () => {
  for (const provider of ['checkout', 'square'] as const) {
    test(`settle import --provider ${provider} reads its events, one a line, and applies each once`, async () => {
      const shipmentId = await newShipment();
      const event =
        provider === 'checkout' ? checkoutCapture(shipmentId, 1000) : squareCompleted(shipmentId, 1000);
      const file = join(mkdtempSync(join(tmpdir(), `settle-${provider}-`)), 'export.jsonl');
      writeFileSync(file, `${JSON.stringify(event)}\n${JSON.stringify(event)}\n`);
      const run = await runSettle(
        ['import', file, '--provider', provider, '--json'],
        gateways.get(provider)!.env,
      );
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout) as ImportSummary;
      assert.deepEqual(summary.counts, {
        accepted: 1,
        duplicate: 1,
        ignored: 0,
        rejected: 0,
        unavailable: 0,
      });
      await appliedOnce(shipmentId, 1000, provider === 'checkout' ? 'EUR' : 'USD');
    });

    test(`settle simulate --provider ${provider} signs as ${provider} signs and the gateway takes every event`, async () => {
      const { url, env } = gateways.get(provider)!;
      const run = await runSettle(
        [
          'simulate',
          '--provider',
          provider,
          '--gateway',
          url,
          '--count',
          '3',
          '--rate',
          '50',
          '--duplicates',
          '0',
          '--late',
          '0',
          '--out-of-order',
          '0',
          '--add-shipments',
          '--json',
        ],
        env,
      );
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout) as SimulateSummary;
      // One payment: authorized, captured, refunded.
      assert.deepEqual(summary.responses, { accepted: 3 });
      assert.equal(summary.network_errors, 0);
    });
  }
});
