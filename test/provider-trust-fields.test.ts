/**
 * Issue 32, "effects come only from signed fields": what an attacker holding one signed Adyen item
 * (from a log, or seen before its own delivery) can change in it without breaking its HMAC, and that
 * none of it moves the effect. Adyen's HMAC covers pspReference, originalReference,
 * merchantAccountCode, merchantReference, amount.value, amount.currency, eventCode and success,
 * joined by `:`; everything else in the item, and the batch's `live`, is not covered.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import {
  adyenBatch,
  adyenItem,
  ledgerOf,
  newAdyenKey,
  paymentStatusOf,
  postAdyen,
  signAdyen,
} from './support/providers';

const key = newAdyenKey();
const basicAuth = 'adyen-notifications:signed fields only';

const stack = useTestStack({ config: { adyenHmacKeys: [key], adyenBasicAuth: basicAuth } });

async function newShipment(id = uniqueId('SHP')): Promise<string> {
  await addShipments(stack.pool, [id]);
  return id;
}

const settleId = (item: Record<string, unknown>) =>
  `adyen:${item.pspReference}:${item.eventCode}:${item.success}`;

const send = (items: Record<string, unknown>[]) => postAdyen(stack, adyenBatch(items), { basicAuth });

async function workflowResult(item: Record<string, unknown>): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(settleId(item))).result();
}

async function storedShipment(item: Record<string, unknown>): Promise<string | undefined> {
  const { rows } = await stack.pool.query<{ shipment: string }>(
    `SELECT payload->'data'->>'shipment_id' AS shipment FROM events WHERE event_id = $1`,
    [settleId(item)],
  );
  return rows[0]?.shipment;
}

/** Every unsigned place of an item an adapter could read a shipment (or anything else) from, set to `value`. */
function withUnsignedFieldsSetTo(signed: Record<string, unknown>, value: string): Record<string, unknown> {
  const additionalData = signed.additionalData as Record<string, string>;
  return {
    ...signed,
    eventDate: '2031-01-01T00:00:00+00:00',
    paymentMethod: value,
    reason: value,
    shipment_id: value,
    metadata: { shipment_id: value },
    additionalData: {
      ...additionalData,
      'metadata.shipment_id': value,
      shipment_id: value,
      'metadata.payment_id': value,
      'metadata.amount': '1',
      merchantReference: value,
      originalReference: value,
      paymentLinkId: value,
    },
  };
}

describe('Adyen: only what the HMAC covers decides', () => {
  test('a signed item whose unsigned fields name another shipment after signing takes effect on its merchantReference only', async () => {
    const shipment = await newShipment();
    const victim = await newShipment();
    const signed = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipment }), key);
    const retargeted = withUnsignedFieldsSetTo(signed, victim);

    const reply = await send([retargeted]);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.text, '[accepted]');
    assert.equal((await workflowResult(retargeted)).outcome, 'applied');
    assert.equal(await paymentStatusOf(stack, shipment), 'authorized');
    assert.equal(await paymentStatusOf(stack, victim), 'pending');
    assert.equal(await storedShipment(retargeted), shipment);

    // The genuine delivery after it has the same settle event ID: no second effect (a conflict, as its
    // eventDate differs; the first effect stands, and it is the signed one).
    assert.equal((await send([signed])).text, '[accepted]');
    assert.equal(await countRows(stack.pool, 'events', settleId(signed)), 1);
    assert.equal(await paymentStatusOf(stack, victim), 'pending');
  });

  test('a CAPTURE with unsigned fields changed moves the signed amount of the signed payment to the signed shipment', async () => {
    const shipment = await newShipment();
    const victim = await newShipment();
    const auth = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipment }), key);
    const capture = signAdyen(
      adyenItem({
        eventCode: 'CAPTURE',
        originalReference: String(auth.pspReference),
        merchantReference: shipment,
        value: 12500,
      }),
      key,
    );
    assert.equal((await send([auth, withUnsignedFieldsSetTo(capture, victim)])).text, '[accepted]');
    await workflowResult(capture);

    assert.equal(await paymentStatusOf(stack, shipment), 'captured');
    assert.deepEqual(await ledgerOf(stack, victim), []);
    const { rows } = await stack.pool.query<{ payment_id: string; amount: string }>(
      `SELECT payment_id, amount FROM ledger_entries WHERE shipment_id = $1`,
      [shipment],
    );
    assert.deepEqual(
      rows.map((row) => [row.payment_id, Number(row.amount)]),
      [[String(auth.pspReference), 12500]],
    );
  });

  test('a value shifted across the `:` the signed text is joined with is refused, writing nothing', async () => {
    // Shipment IDs may hold `:`. The item signs `…:SettleTestECOM:<prefix>:<victim>:…`, which also
    // reads as merchantAccountCode `SettleTestECOM:<prefix>` with merchantReference `<victim>`.
    const victim = await newShipment();
    const prefix = uniqueId('region');
    const shipment = await newShipment(`${prefix}:${victim}`);
    const signed = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipment }), key);
    const shifted = {
      ...signed,
      merchantAccountCode: `${String(signed.merchantAccountCode)}:${prefix}`,
      merchantReference: victim,
    };
    const reply = await send([shifted]);
    assert.equal(reply.status, 401, reply.text);
    assert.equal(reply.body.error, 'invalid_signature');
    assert.match(String(reply.body.message), /merchantAccountCode/);
    assert.equal(await countRows(stack.pool, 'events', settleId(signed)), 0);
    assert.equal(await paymentStatusOf(stack, victim), 'pending');

    // The item as signed is taken, for the shipment it names.
    assert.equal((await send([signed])).text, '[accepted]');
    await workflowResult(signed);
    assert.equal(await paymentStatusOf(stack, shipment), 'authorized');
    assert.equal(await paymentStatusOf(stack, victim), 'pending');
  });

  test('a signed value replaced by an array or object that signs as the same text is refused', async () => {
    const shipment = await newShipment();
    const auth = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipment }), key);
    const capture = signAdyen(
      adyenItem({
        eventCode: 'CAPTURE',
        originalReference: String(auth.pspReference),
        merchantReference: shipment,
      }),
      key,
    );
    // `["X"]` signs as `X`; read as a reference it is not a string, and the payment would fall back
    // to the capture's own pspReference.
    for (const [fieldName, value] of [
      ['originalReference', [auth.pspReference]],
      ['merchantReference', [shipment]],
      ['pspReference', [capture.pspReference]],
    ] as const) {
      const reply = await send([{ ...capture, [fieldName]: value }]);
      assert.equal(reply.status, 401, `${fieldName}: ${reply.text}`);
      assert.match(String(reply.body.message), new RegExp(fieldName));
    }
    assert.equal(await countRows(stack.pool, 'events', settleId(capture)), 0);
    assert.equal(await paymentStatusOf(stack, shipment), 'pending');
  });

  test('an item that names its shipment only outside the HMAC is unmatched, not applied to it', async () => {
    const victim = await newShipment();
    const signed = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: '' }), key);
    const reply = await send([withUnsignedFieldsSetTo(signed, victim)]);
    assert.equal(reply.text, '[accepted]');
    assert.equal(await countRows(stack.pool, 'events', settleId(signed)), 0);
    const { rows } = await stack.pool.query<{ reason: string }>(
      'SELECT reason FROM provider_exceptions WHERE event_id = $1',
      [settleId(signed)],
    );
    assert.match(rows[0]!.reason, /merchantReference/);
    assert.equal(await paymentStatusOf(stack, victim), 'pending');
  });
});
