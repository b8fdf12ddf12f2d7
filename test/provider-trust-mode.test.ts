/**
 * Issue 32, "provider mode": with SETTLE_PROVIDER_MODE=live, a verified event of the other mode
 * (Stripe `livemode: false`, an Adyen batch with `live: "false"`) is acknowledged as ignored and
 * changes nothing: no event row, no run, no exception; counted as ignored. A live one still works,
 * and `settle import --provider` (the same door) applies the same rule.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { webhooksTotal } from '../src/metrics/settle-metrics';
import { countRows, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import {
  adyenBatch,
  adyenItem,
  newAdyenKey,
  newStripeSecret,
  paymentIntent,
  paymentStatusOf,
  postAdyen,
  postStripe,
  signAdyen,
  stripeEvent,
} from './support/providers';
import { runSettle, stackEnv } from './support/settle-cli';

const stripeSecret = newStripeSecret();
const adyenKey = newAdyenKey();
const basicAuth = 'adyen-notifications:provider mode';
const scratch = mkdtempSync(join(tmpdir(), 'settle-provider-mode-'));
const stack = useTestStack({
  config: {
    providerMode: 'live',
    stripeWebhookSecrets: [stripeSecret],
    adyenHmacKeys: [adyenKey],
    adyenBasicAuth: basicAuth,
  },
});
after(() => rmSync(scratch, { recursive: true, force: true }));

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

/** True when Temporal has no run at all under the event's workflow ID. */
async function noRun(eventId: string): Promise<boolean> {
  try {
    await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
    return false;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return true;
    throw error;
  }
}

async function providerExceptions(eventId: string): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM provider_exceptions WHERE event_id = $1',
    [eventId],
  );
  return rows[0]!.n;
}

/** settle_webhooks_total for a route with outcome `ignored` (the gateway runs in this process). */
async function ignoredCount(route: string): Promise<number> {
  const { values } = await webhooksTotal.get();
  return values
    .filter((value) => value.labels.route === route && value.labels.outcome === 'ignored')
    .reduce((sum, value) => sum + value.value, 0);
}

const adyenId = (item: Record<string, unknown>) =>
  `adyen:${item.pspReference}:${item.eventCode}:${item.success}`;

describe('SETTLE_PROVIDER_MODE=live at the webhooks', () => {
  test('a test-mode Stripe event is answered 200 ignored and stores and starts nothing; a live one takes effect', async () => {
    const shipmentId = await newShipment();
    const before = await ignoredCount('/webhooks/stripe');
    const testMode = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId), { livemode: false });
    const unmatched = stripeEvent('payment_intent.succeeded', paymentIntent(undefined), { livemode: false });
    for (const event of [testMode, unmatched]) {
      const reply = await postStripe(stack, event, { secret: stripeSecret });
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(reply.body, { status: 'ignored', event_id: event.id });
      assert.equal(await countRows(stack.pool, 'events', String(event.id)), 0);
      assert.equal(await providerExceptions(String(event.id)), 0);
      assert.ok(await noRun(String(event.id)), 'no workflow run was started');
    }
    assert.equal(await ignoredCount('/webhooks/stripe'), before + 2);
    assert.equal(await paymentStatusOf(stack, shipmentId), 'pending');

    const live = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId), { livemode: true });
    const accepted = await postStripe(stack, live, { secret: stripeSecret });
    assert.equal(accepted.status, 202, accepted.text);
    await stack.client.workflow.getHandle(paymentWorkflowId(String(live.id))).result();
    assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
  });

  test('a test-mode event is still verified first: a bad signature is refused, not ignored', async () => {
    const event = stripeEvent('payment_intent.succeeded', paymentIntent('SHP-x'), { livemode: false });
    const reply = await postStripe(stack, event, { secret: newStripeSecret() });
    assert.equal(reply.status, 401);
    const batch = adyenBatch([signAdyen(adyenItem({ eventCode: 'AUTHORISATION' }), newAdyenKey())], 'false');
    assert.equal((await postAdyen(stack, batch, { basicAuth })).status, 401);
  });

  test('a test-mode Adyen batch is answered [accepted] and admits nothing; a live one takes effect', async () => {
    const shipmentId = await newShipment();
    const before = await ignoredCount('/webhooks/adyen');
    const auth = signAdyen(
      adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }),
      adyenKey,
    );
    const noShipment = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: '' }), adyenKey);
    const reply = await postAdyen(stack, adyenBatch([auth, noShipment], 'false'), { basicAuth });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.text, '[accepted]');
    for (const item of [auth, noShipment]) {
      assert.equal(await countRows(stack.pool, 'events', adyenId(item)), 0);
      assert.equal(await providerExceptions(adyenId(item)), 0);
      assert.ok(await noRun(adyenId(item)), 'no workflow run was started');
    }
    assert.equal(await ignoredCount('/webhooks/adyen'), before + 1);
    assert.equal(await paymentStatusOf(stack, shipmentId), 'pending');

    // The same signed item in a live batch: a legitimate notification keeps working.
    const live = await postAdyen(stack, adyenBatch([auth], 'true'), { basicAuth });
    assert.equal(live.text, '[accepted]');
    await stack.client.workflow.getHandle(paymentWorkflowId(adyenId(auth))).result();
    assert.equal(await paymentStatusOf(stack, shipmentId), 'authorized');
  });
});

describe('SETTLE_PROVIDER_MODE=live in settle import --provider', () => {
  test('a test-mode line is ignored and writes nothing; a live one is accepted', async () => {
    const stripeShipment = await newShipment();
    const adyenShipment = await newShipment();
    const testStripe = stripeEvent('payment_intent.succeeded', paymentIntent(stripeShipment), {
      livemode: false,
    });
    const liveStripe = stripeEvent('payment_intent.succeeded', paymentIntent(stripeShipment), {
      livemode: true,
    });
    const testAdyen = adyenItem({ eventCode: 'AUTHORISATION', merchantReference: adyenShipment });
    const liveAdyen = adyenItem({ eventCode: 'AUTHORISATION', merchantReference: adyenShipment });
    const stripeFile = join(scratch, 'stripe.jsonl');
    const adyenFile = join(scratch, 'adyen.jsonl');
    writeFileSync(stripeFile, [testStripe, liveStripe].map((line) => JSON.stringify(line)).join('\n'));
    writeFileSync(
      adyenFile,
      [
        { live: 'false', NotificationRequestItem: testAdyen },
        { live: 'true', NotificationRequestItem: liveAdyen },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
    const env = stackEnv(stack, { SETTLE_PROVIDER_MODE: 'live' });
    for (const [provider, file] of [
      ['stripe', stripeFile],
      ['adyen', adyenFile],
    ] as const) {
      const run = await runSettle(['import', '--provider', provider, '--json', file], env);
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
      const summary = JSON.parse(run.stdout) as { counts: Record<string, number> };
      assert.equal(summary.counts.ignored, 1, run.stdout);
      assert.equal(summary.counts.accepted, 1, run.stdout);
    }
    assert.equal(await countRows(stack.pool, 'events', String(testStripe.id)), 0);
    assert.equal(await countRows(stack.pool, 'events', String(liveStripe.id)), 1);
    assert.equal(await countRows(stack.pool, 'events', adyenId(testAdyen)), 0);
    assert.equal(await countRows(stack.pool, 'events', adyenId(liveAdyen)), 1);
    assert.ok(await noRun(String(testStripe.id)));
    assert.ok(await noRun(adyenId(testAdyen)));
  });
});
