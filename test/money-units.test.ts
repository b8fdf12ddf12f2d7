/**
 * Money has one unit inside settle (SPEC.md, "Payment events"): shipments name what they expect in
 * major units (`settle shipments add S --amount 5000 --currency HUF`), each provider signs a payment
 * of exactly that amount in its own units, and the payment applies once, its ledger entry and ERP
 * posting in ISO 4217 minor units. A short, an over, an other-currency payment is held, and so is an
 * amount ISO's minor units cannot express (never rounded), whatever the event's type.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, startTestStack, uniqueId, type TestStack } from '../testkit/harness';
import {
  createPaypalCertificates,
  paypalCapture,
  paypalEvent,
  signPaypal,
  type PaypalCertificates,
} from '../testkit/paypal-api';
import { startReceiver, type Receiver } from '../testkit/receiver';
import {
  adyenBatch,
  adyenItem,
  ledgerOf,
  newAdyenKey,
  newStripeSecret,
  paymentIntent,
  postAdyen,
  postStripe,
  signAdyen,
  stripeEvent,
} from './support/providers';
import { runSettle, stackEnv } from './support/settle-cli';

const stripeSecret = newStripeSecret();
const adyenKey = newAdyenKey();
const paypalWebhookId = '1JE4291016473214C';
let certs: PaypalCertificates;
let carrier: Receiver;
let erp: Receiver;
let stack: TestStack;

before(async () => {
  certs = await createPaypalCertificates();
  const certPath = join(mkdtempSync(join(tmpdir(), 'settle-money-')), 'paypal-cert.pem');
  writeFileSync(certPath, certs.paypal.cert);
  carrier = await startReceiver();
  erp = await startReceiver();
  stack = await startTestStack({
    config: {
      carrierUrl: carrier.url,
      erpUrl: erp.url,
      stripeWebhookSecrets: [stripeSecret],
      adyenHmacKeys: [adyenKey],
      paypalWebhookId,
      paypalCertPath: certPath,
    },
  });
});
after(async () => {
  await stack.close();
  await carrier.close();
  await erp.close();
});

type Provider = 'stripe' | 'adyen' | 'paypal';

/** Posts a capture signed as the provider signs it; answers the settle event ID it was admitted as. */
async function capture(
  provider: Provider,
  shipmentId: string,
  amount: number | string,
  currency: string,
): Promise<string> {
  if (provider === 'stripe') {
    // Stripe names currencies in lower case.
    const intent = paymentIntent(shipmentId, {
      amount,
      amount_received: amount,
      currency: currency.toLowerCase(),
    });
    const event = stripeEvent('payment_intent.succeeded', intent);
    const reply = await postStripe(stack, event, { secret: stripeSecret });
    assert.equal(reply.status, 202, reply.text);
    return String(event.id);
  }
  if (provider === 'adyen') {
    const pspReference = randomBytes(8).toString('hex').toUpperCase();
    const item = adyenItem({
      eventCode: 'CAPTURE',
      pspReference,
      originalReference: `AUTH${pspReference}`,
      merchantReference: shipmentId,
      value: Number(amount),
      currency,
    });
    const reply = await postAdyen(stack, adyenBatch([signAdyen(item, adyenKey)]));
    assert.equal(reply.status, 200, reply.text);
    return `adyen:${pspReference}:CAPTURE:true`;
  }
  const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, String(amount), currency));
  const body = JSON.stringify(event);
  const response = await fetch(`${stack.gatewayUrl}/webhooks/paypal`, {
    method: 'POST',
    headers: signPaypal(body, { webhookId: paypalWebhookId, key: certs.paypal.key }),
    body,
  });
  assert.equal(response.status, 202, await response.text());
  return String(event.id);
}

/** Shipments by name, loaded through `settle shipments import` with their expectations in major units. */
async function importShipments(
  expectations: Record<string, [string, string]>,
): Promise<Record<string, string>> {
  const ids = Object.fromEntries(Object.keys(expectations).map((name) => [name, uniqueId('SHP')]));
  const csv = [
    'shipment_id,amount,currency',
    ...Object.entries(expectations).map(([name, [amount, currency]]) => `${ids[name]},${amount},${currency}`),
  ].join('\n');
  const file = join(mkdtempSync(join(tmpdir(), 'settle-money-')), 'shipments.csv');
  writeFileSync(file, `${csv}\n`);
  const imported = await runSettle(['shipments', 'import', file], stackEnv(stack));
  assert.equal(imported.code, 0, imported.stderr);
  return ids;
}

async function resultOf(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

function deliveredTo(receiver: Receiver, shipmentId: string) {
  return receiver.requests.filter((request) => request.json.shipment_id === shipmentId).map((r) => r.json);
}

/** Applied once: one capture entry in ISO minor units, posted to the ERP as such, released once. */
async function assertApplied(eventId: string, shipmentId: string, minor: number, currency: string) {
  assert.equal((await resultOf(eventId)).outcome, 'applied', eventId);
  assert.deepEqual(
    (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.currency]),
    [['capture', minor, currency]],
  );
  assert.deepEqual(
    deliveredTo(erp, shipmentId).map((body) => [body.kind, body.amount, body.currency]),
    [['capture', minor, currency]],
  );
  assert.equal(deliveredTo(carrier, shipmentId).length, 1, 'released once');
}

async function needsReviewDetail(eventId: string): Promise<string> {
  const listed = await runSettle(['exceptions', '--kind', 'needs_review', '--json'], stackEnv(stack));
  assert.equal(listed.code, 0, listed.stderr);
  const rows = (JSON.parse(listed.stdout) as { exceptions: { event_id: string; detail: string }[] })
    .exceptions;
  const row = rows.find((exception) => exception.event_id === eventId);
  assert.ok(row, `${eventId} is not listed as needs_review`);
  return row.detail;
}

/** Held: needs_review, nothing written to the ledger or the outbox, nothing released. */
async function assertHeld(eventId: string, shipmentId: string, detail: RegExp) {
  assert.equal((await resultOf(eventId)).outcome, 'needs_review', eventId);
  assert.equal(await countRows(stack.pool, 'ledger_entries', eventId), 0);
  assert.equal(await countRows(stack.pool, 'outbox', eventId), 0);
  assert.equal(deliveredTo(carrier, shipmentId).length, 0, 'never released');
  assert.match(await needsReviewDetail(eventId), detail);
}

async function mismatches(reason: string): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  const line = new RegExp(`^settle_payment_mismatches_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(
    await response.text(),
  );
  return Number(line?.[1] ?? 0);
}

describe("a payment of exactly what the shipment expects, in each provider's units", () => {
  // The table: the payment, what the provider sends, and the ISO minor units settle keeps.
  const rows: {
    name: string;
    provider: Provider;
    major: string;
    currency: string;
    sent: number | string;
    iso: number;
  }[] = [
    {
      name: '5,000 HUF by Stripe',
      provider: 'stripe',
      major: '5000',
      currency: 'HUF',
      sent: 500000,
      iso: 500000,
    },
    {
      name: '1,000 ISK by Stripe',
      provider: 'stripe',
      major: '1000',
      currency: 'ISK',
      sent: 100000,
      iso: 1000,
    },
    {
      name: '5,000 CLP by Adyen',
      provider: 'adyen',
      major: '5000',
      currency: 'CLP',
      sent: 500000,
      iso: 5000,
    },
    {
      name: '1,000 CVE by Adyen',
      provider: 'adyen',
      major: '1000',
      currency: 'CVE',
      sent: 1000,
      iso: 100000,
    },
    { name: '100 TWD by PayPal', provider: 'paypal', major: '100', currency: 'TWD', sent: '100', iso: 10000 },
  ];

  test('applies once, in ISO minor units, and releases the shipment once', async () => {
    const ids = await importShipments(
      Object.fromEntries(rows.map((row) => [row.name, [row.major, row.currency] as [string, string]])),
    );
    const events = await Promise.all(
      rows.map((row) => capture(row.provider, ids[row.name]!, row.sent, row.currency)),
    );
    for (const [index, row] of rows.entries()) {
      await assertApplied(events[index]!, ids[row.name]!, row.iso, row.currency);
    }
  });

  test('a Stripe capture of 420 Ft against 42,000 Ft expected is held as short', async () => {
    const shipmentId = uniqueId('SHP');
    const added = await runSettle(
      ['shipments', 'add', shipmentId, '--amount', '42000', '--currency', 'HUF'],
      stackEnv(stack),
    );
    assert.equal(added.code, 0, added.stderr);
    const { rows: stored } = await stack.pool.query<{ expected_amount: string }>(
      'SELECT expected_amount FROM shipments WHERE shipment_id = $1',
      [shipmentId],
    );
    assert.equal(Number(stored[0]?.expected_amount), 4200000, 'ISO: 42,000.00 forints');
    const eventId = await capture('stripe', shipmentId, 42000, 'HUF');
    await assertHeld(eventId, shipmentId, /paid 42000, the shipment expects 4200000 \(minor units\): short/);
  });
});

describe('an expectation stored in the wrong scale (by a release that read Intl digits)', () => {
  test('is corrected by giving it again in major units, and the exact payment then applies', async () => {
    const shipmentId = uniqueId('SHP');
    // What `shipments add --amount 5000 --currency HUF` stored where ICU gives HUF no decimals.
    await addShipments(stack.pool, [{ shipmentId, expectedAmount: 5000, expectedCurrency: 'HUF' }]);
    const again = await runSettle(
      ['shipments', 'add', shipmentId, '--amount', '5000', '--currency', 'HUF'],
      stackEnv(stack),
    );
    assert.equal(again.code, 0, again.stderr);
    const eventId = await capture('stripe', shipmentId, 500000, 'HUF');
    await assertApplied(eventId, shipmentId, 500000, 'HUF');
  });
});

describe('a payment that is not what the shipment expects is held, for each provider', () => {
  // Per provider: the expectation, then short, over, in another currency and inexact payments.
  const cases: Record<
    Provider,
    {
      expect: [string, string];
      short: [number | string, string];
      over: [number | string, string];
      other: [number | string, string];
      inexact: [number | string, string];
      inexactShown: string;
    }
  > = {
    stripe: {
      expect: ['1000', 'ISK'],
      short: [99900, 'ISK'],
      over: [100100, 'ISK'],
      other: [100000, 'EUR'],
      inexact: [100050, 'ISK'],
      inexactShown: '1000.50 ISK',
    },
    adyen: {
      expect: ['5000', 'CLP'],
      short: [499900, 'CLP'],
      over: [500100, 'CLP'],
      other: [500000, 'EUR'],
      inexact: [500050, 'CLP'],
      inexactShown: '5000.50 CLP',
    },
    paypal: {
      expect: ['100', 'JPY'],
      short: ['99', 'JPY'],
      over: ['101', 'JPY'],
      other: ['100', 'USD'],
      inexact: ['100.5', 'JPY'],
      inexactShown: '100.5 JPY',
    },
  };

  for (const [provider, payments] of Object.entries(cases) as [Provider, (typeof cases)[Provider]][]) {
    test(`${provider}: short, over, other currency and inexact are needs_review with their reasons`, async () => {
      const inexactBefore = await mismatches('amount_inexact');
      const kinds = ['short', 'over', 'other', 'inexact'] as const;
      const ids = await importShipments(Object.fromEntries(kinds.map((kind) => [kind, payments.expect])));
      const events = await Promise.all(
        kinds.map((kind) => capture(provider, ids[kind]!, payments[kind][0], payments[kind][1])),
      );
      const [short, over, other, inexact] = events as [string, string, string, string];
      await assertHeld(short, ids.short!, /short/);
      await assertHeld(over, ids.over!, /over/);
      await assertHeld(other, ids.other!, new RegExp(`the shipment expects ${payments.expect[1]}`));
      await assertHeld(
        inexact,
        ids.inexact!,
        new RegExp(`paid ${payments.inexactShown.replace('.', '\\.')}: inexact, ISO 4217 gives`),
      );
      assert.equal(await mismatches('amount_inexact'), inexactBefore + 1);
    });
  }

  test('a Stripe refund of fractional krónur after an exact capture is held; the capture stands', async () => {
    const ids = await importShipments({ paid: ['1000', 'ISK'] });
    const shipmentId = ids.paid!;
    const intent = paymentIntent(shipmentId, { amount: 100000, amount_received: 100000, currency: 'isk' });
    const paid = stripeEvent('payment_intent.succeeded', intent);
    assert.equal((await postStripe(stack, paid, { secret: stripeSecret })).status, 202);
    await assertApplied(String(paid.id), shipmentId, 1000, 'ISK');

    const refund = stripeEvent('refund.created', {
      id: `re_${randomBytes(8).toString('hex')}`,
      object: 'refund',
      amount: 50,
      currency: 'isk',
      status: 'succeeded',
      payment_intent: intent.id,
      metadata: { shipment_id: shipmentId },
    });
    assert.equal((await postStripe(stack, refund, { secret: stripeSecret })).status, 202);
    assert.equal((await resultOf(String(refund.id))).outcome, 'needs_review');
    assert.match(await needsReviewDetail(String(refund.id)), /paid 0\.50 ISK: inexact/);
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount]),
      [['capture', 1000]],
    );
  });
});
