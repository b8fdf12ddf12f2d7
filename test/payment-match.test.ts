/**
 * A payment pays for the shipment it names only if it is what that shipment expects: its amount and
 * currency (when the shipment names them) and a provider account settle takes (SETTLE_STRIPE_ACCOUNTS,
 * SETTLE_ADYEN_MERCHANT_ACCOUNTS). A payment that does not match never releases the carrier: it is
 * `needs_review` with its reason, in `settle exceptions`, on the run's SettleOutcome and in a metric.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { SettleOutcomeKey } from '../src/workflows/search-attributes';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, paymentEvent, postWebhook, uniqueId } from '../testkit/harness';
import { useReceiver, useTestStack } from '../testkit/hooks';
import { runSettle, stackEnv } from './support/settle-cli';
import {
  adyenBatch,
  adyenItem,
  newAdyenKey,
  newStripeSecret,
  paymentIntent,
  postAdyen,
  postStripe,
  signAdyen,
  stripeEvent,
} from './support/providers';

const stripeSecret = newStripeSecret();
const adyenKey = newAdyenKey();
const basicAuth = 'adyen-notifications:correct horse battery staple';
const carrier = useReceiver();
const stack = useTestStack(() => ({
  config: {
    carrierUrl: carrier.url,
    stripeWebhookSecrets: [stripeSecret],
    stripeAccounts: ['acct_1Allowed'],
    adyenHmacKeys: [adyenKey],
    adyenBasicAuth: basicAuth,
    adyenMerchantAccounts: ['SettleTestECOM'],
  },
}));

async function shipmentExpecting(amount: number | undefined, currency = 'EUR'): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [
    amount === undefined ? shipmentId : { shipmentId, expectedAmount: amount, expectedCurrency: currency },
  ]);
  return shipmentId;
}

async function resultOf(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

async function outcomeAttribute(eventId: string): Promise<unknown> {
  const described = await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
  return described.typedSearchAttributes.get(SettleOutcomeKey);
}

async function metric(reason: string): Promise<number> {
  const response = await fetch(`${stack.gatewayUrl}/metrics`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  const text = await response.text();
  const line = new RegExp(`^settle_payment_mismatches_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text);
  return Number(line?.[1] ?? 0);
}

type Listed = { kind: string; event_id: string; detail: string; next_step: string };

async function listed(eventId: string): Promise<Listed[]> {
  const result = await runSettle(['exceptions', '--kind', 'needs_review', '--json'], stackEnv(stack));
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { exceptions: Listed[] }).exceptions.filter(
    (row) => row.event_id === eventId,
  );
}

function releasesOf(shipmentId: string): number {
  return carrier.requests.filter((request) => request.json.shipment_id === shipmentId).length;
}

/** The event ended needs_review with `detail` in its exception: nothing applied, nothing released. */
async function assertNeedsReview(eventId: string, shipmentId: string, detail: RegExp): Promise<void> {
  const result = await resultOf(eventId);
  assert.equal(result.outcome, 'needs_review');
  assert.deepEqual(result.deliveries, []);
  assert.equal(await outcomeAttribute(eventId), 'needs_review');
  assert.equal(await countRows(stack.pool, 'ledger_entries', eventId), 0);
  assert.equal(await countRows(stack.pool, 'outbox', eventId), 0);
  const { rows } = await stack.pool.query<{ payment_status: string; hold_status: string }>(
    'SELECT payment_status, hold_status FROM shipments WHERE shipment_id = $1',
    [shipmentId],
  );
  assert.deepEqual(rows[0], { payment_status: 'pending', hold_status: 'held' });
  assert.equal(releasesOf(shipmentId), 0, 'the carrier was never asked to release');
  const exceptions = await listed(eventId);
  assert.equal(exceptions.length, 1, JSON.stringify(exceptions));
  assert.match(exceptions[0]!.detail, detail);
  assert.match(exceptions[0]!.next_step, /settle exceptions resolve/);
}

describe('a payment that does not match its shipment', () => {
  test('the exact amount and currency applies and releases', async () => {
    const shipmentId = await shipmentExpecting(12500);
    const event = paymentEvent({ shipmentId, amount: 12500 });
    assert.equal((await postWebhook(stack, event)).status, 202);
    const result = await resultOf(event.id);
    assert.equal(result.outcome, 'applied');
    assert.equal(releasesOf(shipmentId), 1);
  });

  test('a short payment is needs_review, counted, never released', async () => {
    const shipmentId = await shipmentExpecting(12500);
    const before = await metric('amount_short');
    const event = paymentEvent({ shipmentId, amount: 50 });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await assertNeedsReview(event.id, shipmentId, /paid 50, the shipment expects 12500.*short/);
    assert.equal(await metric('amount_short'), before + 1);
    // A redelivery answers as a duplicate and decides nothing again.
    assert.equal((await postWebhook(stack, event)).status, 200);
    assert.equal(await metric('amount_short'), before + 1);
  });

  test('an overpayment is needs_review', async () => {
    const shipmentId = await shipmentExpecting(12500);
    const event = paymentEvent({ shipmentId, amount: 12501 });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await assertNeedsReview(event.id, shipmentId, /paid 12501.*over/);
  });

  test('another currency is needs_review', async () => {
    const shipmentId = await shipmentExpecting(12500, 'USD');
    const event = paymentEvent({ shipmentId, amount: 12500 });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await assertNeedsReview(event.id, shipmentId, /paid in EUR, the shipment expects USD/);
  });

  test('an imported payment meets the same rule', async () => {
    const shipmentId = await shipmentExpecting(12500);
    const event = paymentEvent({ shipmentId, amount: 100 });
    const dir = mkdtempSync(join(tmpdir(), 'settle-match-'));
    writeFileSync(join(dir, 'report.jsonl'), `${JSON.stringify(event)}\n`);
    const imported = await runSettle(['import', join(dir, 'report.jsonl')], stackEnv(stack));
    assert.equal(imported.code, 0, imported.stderr);
    await assertNeedsReview(event.id, shipmentId, /short/);
  });

  test('a Stripe payment from a connected account not allowed is needs_review; allowed and platform apply', async () => {
    const foreign = await shipmentExpecting(undefined);
    const before = await metric('account_not_allowed');
    const connect: Record<string, unknown> = {
      ...stripeEvent('payment_intent.succeeded', paymentIntent(foreign)),
      account: 'acct_1Other',
    };
    assert.equal((await postStripe(stack, connect, { secret: stripeSecret })).status, 202);
    await assertNeedsReview(
      String(connect.id),
      foreign,
      /Stripe account acct_1Other is not in SETTLE_STRIPE_ACCOUNTS/,
    );
    assert.equal(await metric('account_not_allowed'), before + 1);

    const allowed = await shipmentExpecting(undefined);
    const fromAllowed: Record<string, unknown> = {
      ...stripeEvent('payment_intent.succeeded', paymentIntent(allowed)),
      account: 'acct_1Allowed',
    };
    assert.equal((await postStripe(stack, fromAllowed, { secret: stripeSecret })).status, 202);
    assert.equal((await resultOf(String(fromAllowed.id))).outcome, 'applied');

    const platform = await shipmentExpecting(12500);
    const own = stripeEvent('payment_intent.succeeded', paymentIntent(platform));
    assert.equal((await postStripe(stack, own, { secret: stripeSecret })).status, 202);
    assert.equal((await resultOf(String(own.id))).outcome, 'applied');
    assert.equal(releasesOf(platform), 1);
  });

  test('an Adyen payment to another merchant account is needs_review', async () => {
    const shipmentId = await shipmentExpecting(undefined);
    const item = {
      ...adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId, originalReference: 'PSP1' }),
      merchantAccountCode: 'OtherMerchantECOM',
    };
    const reply = await postAdyen(stack, adyenBatch([signAdyen(item, adyenKey)]), { basicAuth });
    assert.equal(reply.status, 200, reply.text);
    const { rows } = await stack.pool.query<{ event_id: string }>(
      `SELECT event_id FROM events WHERE payload #>> '{data,shipment_id}' = $1`,
      [shipmentId],
    );
    assert.equal(rows.length, 1);
    await assertNeedsReview(
      rows[0]!.event_id,
      shipmentId,
      /Adyen merchant account OtherMerchantECOM is not in SETTLE_ADYEN_MERCHANT_ACCOUNTS/,
    );
  });
});

describe('settle shipments add --amount --currency', () => {
  test('stores the amount in minor units, and refuses an amount the currency cannot have', async () => {
    const shipmentId = uniqueId('SHP');
    const env = stackEnv(stack);
    const added = await runSettle(
      ['shipments', 'add', shipmentId, '--amount', '42.00', '--currency', 'EUR'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    const { rows } = await stack.pool.query<{ expected_amount: number; expected_currency: string }>(
      'SELECT expected_amount, expected_currency FROM shipments WHERE shipment_id = $1',
      [shipmentId],
    );
    assert.deepEqual(rows[0], { expected_amount: 4200, expected_currency: 'EUR' });

    const yen = await runSettle(
      ['shipments', 'add', uniqueId('SHP'), '--amount', '42.5', '--currency', 'JPY'],
      env,
    );
    assert.notEqual(yen.code, 0);
    assert.match(yen.stderr, /at most 0 decimal/);
    const alone = await runSettle(['shipments', 'add', uniqueId('SHP'), '--amount', '42'], env);
    assert.notEqual(alone.code, 0);
    assert.match(alone.stderr, /give both or neither/);

    const dir = mkdtempSync(join(tmpdir(), 'settle-match-'));
    const other = uniqueId('SHP');
    writeFileSync(join(dir, 'shipments.csv'), `shipment_id,amount,currency\n${other},19.99,USD\n`);
    const imported = await runSettle(['shipments', 'import', join(dir, 'shipments.csv')], env);
    assert.equal(imported.code, 0, imported.stderr);
    const { rows: importedRows } = await stack.pool.query<{ expected_amount: number }>(
      'SELECT expected_amount FROM shipments WHERE shipment_id = $1',
      [other],
    );
    assert.equal(importedRows[0]?.expected_amount, 1999);
  });
});
