import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { listExceptions } from '../src/db/exceptions';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { adaptStripeEvent } from '../src/providers/stripe/adapter';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import {
  ledgerOf,
  newStripeSecret,
  paymentIntent,
  paymentStatusOf,
  postStripe,
  stripeEvent,
  stripeRollHeader,
} from './support/providers';

const secret = newStripeSecret();
const rolledSecret = newStripeSecret();
const retiredSecret = newStripeSecret();

const stack = useTestStack({ config: { stripeWebhookSecrets: [secret, rolledSecret] } });

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

async function workflowResult(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

async function nothingWritten(eventId: string) {
  assert.equal(await countRows(stack.pool, 'events', eventId), 0);
  assert.equal(await countRows(stack.pool, 'claims', eventId), 0);
  assert.equal(await countRows(stack.pool, 'ledger_entries', eventId), 0);
}

describe('POST /webhooks/stripe', () => {
  test('a signed payment_intent.succeeded is admitted once and reconciled: the shipment is captured, one capture entry', async () => {
    const shipmentId = await newShipment();
    const intent = paymentIntent(shipmentId, { amount: 4200, amount_received: 4200, currency: 'usd' });
    const event = stripeEvent('payment_intent.succeeded', intent);

    const accepted = await postStripe(stack, event, { secret });
    assert.equal(accepted.status, 202);
    assert.equal(accepted.body.status, 'accepted');
    assert.equal(accepted.body.event_id, event.id);
    assert.equal(accepted.body.workflow_id, `payment:${event.id}`);
    assert.equal((await workflowResult(String(event.id))).outcome, 'applied');

    assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
    assert.deepEqual(await ledgerOf(stack, shipmentId), [
      { kind: 'capture', amount: 4200, currency: 'USD', event_id: event.id },
    ]);
  });

  test('the same event again (a Stripe retry, a dashboard resend after Temporal forgot the run) has no second effect', async () => {
    const shipmentId = await newShipment();
    const event = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId));
    const first = await postStripe(stack, event, { secret });
    assert.equal(first.status, 202);
    const firstResult = await workflowResult(String(event.id));
    assert.equal(firstResult.claimExisted, false);

    // A retry: a new signature and timestamp over the same event.
    const retry = await postStripe(stack, event, { secret: rolledSecret });
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, {
      status: 'duplicate',
      event_id: event.id,
      workflow_id: `payment:${event.id}`,
    });

    // Temporal forgot the closed run (retention): a new run of the same ID meets the claim.
    const handle = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: paymentWorkflowId(String(event.id)),
      args: [{ event: (adaptStripeEvent(event) as { event: unknown }).event }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
    const second = (await handle.result()) as PaymentWorkflowResult;
    assert.equal(second.claimExisted, true);
    const resend = await postStripe(stack, event, { secret });
    assert.equal(resend.status, 200);
    assert.equal(resend.body.status, 'duplicate');

    assert.equal(await countRows(stack.pool, 'events', String(event.id)), 1);
    assert.equal(await countRows(stack.pool, 'claims', String(event.id)), 1);
    assert.equal((await ledgerOf(stack, shipmentId)).length, 1);
  });

  test('a tampered body, an old timestamp, a wrong or retired secret, no signature are refused with 401 and write nothing', async () => {
    const shipmentId = await newShipment();
    const event = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId));
    const id = String(event.id);
    const tampered = JSON.stringify({
      ...event,
      data: { object: paymentIntent(shipmentId, { amount_received: 1 }) },
    });

    const cases = [
      await postStripe(stack, event, { secret, rawBody: tampered }),
      await postStripe(stack, event, { secret, timestamp: Math.floor(Date.now() / 1000) - 600 }),
      await postStripe(stack, event, { secret: newStripeSecret() }),
      await postStripe(stack, event, { secret: retiredSecret }),
      await postStripe(stack, event, { secret, header: '' }),
    ];
    for (const refused of cases) {
      assert.equal(refused.status, 401, refused.text);
      assert.equal(refused.body.error, 'invalid_signature');
    }
    assert.match(String(cases[1]!.body.message), /timestamp outside the 300 s tolerance/);
    await nothingWritten(id);
    assert.equal(await paymentStatusOf(stack, shipmentId), 'pending');
  });

  test('during a secret roll a header with several v1 signatures is accepted when one matches a configured secret', async () => {
    const shipmentId = await newShipment();
    const event = stripeEvent(
      'payment_intent.amount_capturable_updated',
      paymentIntent(shipmentId, {
        amount_capturable: 12500,
        status: 'requires_capture',
      }),
    );
    const payload = JSON.stringify(event);
    const accepted = await postStripe(stack, event, {
      secret,
      header: stripeRollHeader(payload, [retiredSecret, rolledSecret]),
    });
    assert.equal(accepted.status, 202, accepted.text);
    await workflowResult(String(event.id));
    assert.equal(await paymentStatusOf(stack, shipmentId), 'authorized');
  });

  test('an unknown event type is ignored with 200 and writes nothing', async () => {
    const event = stripeEvent('customer.created', { id: 'cus_1', object: 'customer', metadata: {} });
    const ignored = await postStripe(stack, event, { secret });
    assert.equal(ignored.status, 200);
    assert.deepEqual(ignored.body, { status: 'ignored', event_id: event.id });
    await nothingWritten(String(event.id));
  });

  test('an event without metadata.shipment_id is answered 200 and listed as an unmatched exception naming the event', async () => {
    const event = stripeEvent('payment_intent.succeeded', paymentIntent(undefined));
    const unmatched = await postStripe(stack, event, { secret });
    assert.equal(unmatched.status, 200);
    assert.equal(unmatched.body.status, 'unmatched');
    assert.match(String(unmatched.body.message), /metadata\.shipment_id/);
    assert.equal((await postStripe(stack, event, { secret })).status, 200);

    const exceptions = await listExceptions(stack.pool, {
      kinds: ['unmatched'],
      unreconciledAfterMs: 3_600_000,
      stuckAfterMs: 3_600_000,
      abandonedOutboxIds: [],
      limit: 100,
    });
    const mine = exceptions.filter((row) => row.event_id === event.id);
    assert.equal(mine.length, 1);
    assert.match(mine[0]!.detail, /payment_intent\.succeeded names no shipment/);
    await nothingWritten(String(event.id));
  });

  test('text PostgreSQL cannot store (NUL, a lone surrogate) is a 400 naming the field, wherever it stands', async () => {
    for (const shipmentId of ['SHP-\u0000-1', 'SHP-\ud800-1']) {
      const event = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId));
      const refused = await postStripe(stack, event, { secret });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error, 'invalid_event');
      await nothingWritten(String(event.id));
    }
    // The edge rule of every route (docs/limits.md), before Stripe's library reads the body.
    const elsewhere = stripeEvent('payment_intent.succeeded', {
      ...paymentIntent(undefined),
      description: 'order \u0000 \udc00',
    });
    const reply = await postStripe(stack, elsewhere, { secret });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error, 'invalid_event');
    assert.match(String(reply.body.message), /description/);
    await nothingWritten(String(elsewhere.id));
  });

  test('a refund after a capture adds one refund entry; charge.refunded and refund.created of the same refund, and a resend, add none', async () => {
    const shipmentId = await newShipment();
    const intent = paymentIntent(shipmentId);
    const captured = stripeEvent('payment_intent.succeeded', intent);
    assert.equal((await postStripe(stack, captured, { secret })).status, 202);
    await workflowResult(String(captured.id));

    const refund = {
      id: `re_${uniqueId('r')}`,
      object: 'refund',
      amount: 2500,
      currency: 'eur',
      charge: 'ch_1',
      payment_intent: intent.id,
      status: 'succeeded',
      created: 1_786_000_100,
      metadata: { shipment_id: shipmentId },
    };
    const chargeRefunded = stripeEvent('charge.refunded', {
      id: 'ch_1',
      object: 'charge',
      amount: 12500,
      amount_refunded: 2500,
      currency: 'eur',
      payment_intent: intent.id,
      refunded: false,
      metadata: { shipment_id: shipmentId },
      refunds: { object: 'list', data: [refund], has_more: false },
    });
    const refundCreated = stripeEvent('refund.created', refund);

    assert.equal((await postStripe(stack, chargeRefunded, { secret })).status, 202);
    await workflowResult(String(chargeRefunded.id));
    assert.equal(await paymentStatusOf(stack, shipmentId), 'refunded');
    const afterFirst = await ledgerOf(stack, shipmentId);
    assert.deepEqual(
      afterFirst.map((entry) => [entry.kind, entry.amount]),
      [
        ['capture', 12500],
        ['refund', 2500],
      ],
    );

    // The same refund reported by its own event: admitted (another event ID), no second entry.
    assert.equal((await postStripe(stack, refundCreated, { secret })).status, 202);
    assert.equal((await workflowResult(String(refundCreated.id))).outcome, 'applied');
    // And Stripe resending the first refund event.
    assert.equal((await postStripe(stack, chargeRefunded, { secret })).body.status, 'duplicate');
    assert.deepEqual(await ledgerOf(stack, shipmentId), afterFirst);
  });
});
