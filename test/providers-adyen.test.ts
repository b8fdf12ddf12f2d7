import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { freePort } from '../testkit/free-port';
import { adaptAdyenItem } from '../src/providers/adyen/adapter';
import { startTemporalDevServer, type DevServer } from '../src/stack/temporal-dev-server';
import type { PaymentWorkflowResult } from '../src/workflows';
import { countRows, startTestStack, uniqueId, waitFor, type TestStack } from '../testkit/harness';
import {
  adyenBatch,
  adyenItem,
  ledgerOf,
  newAdyenKey,
  paymentStatusOf,
  postAdyen,
  signAdyen,
} from './support/providers';

// A Temporal server of this file's own, persisted to a file, so an outage can be made and ended.
const cliPath = process.env.SETTLE_TEMPORAL_CLI!;
const scratch = mkdtempSync(join(tmpdir(), 'settle-adyen-'));
const dbFile = join(scratch, 'temporal.db');
const key = newAdyenKey();
const nextKey = newAdyenKey();
const retiredKey = newAdyenKey();
const basicAuth = 'adyen-notifications:correct horse battery staple';
let port: number;
let temporal: DevServer;
let stack: TestStack;

before(async () => {
  port = await freePort();
  temporal = await startTemporalDevServer({ cliPath, port, dbFile });
  stack = await startTestStack({
    temporalAddress: temporal.address,
    config: { adyenHmacKeys: [key, nextKey], adyenBasicAuth: basicAuth },
  });
});
after(async () => {
  await stack.close();
  await temporal.stop();
  rmSync(scratch, { recursive: true, force: true });
});

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

function settleId(item: Record<string, unknown>): string {
  return `adyen:${item.pspReference}:${item.eventCode}:${item.success}`;
}

async function workflowResult(eventId: string): Promise<PaymentWorkflowResult> {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

async function send(items: Record<string, unknown>[]) {
  return postAdyen(stack, adyenBatch(items), { basicAuth });
}

describe('POST /webhooks/adyen', () => {
  test('a signed AUTHORISATION is acknowledged with [accepted] after admission and reconciled once', async () => {
    const shipmentId = await newShipment();
    const item = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }), key);
    const reply = await send([item]);
    assert.equal(reply.status, 200);
    assert.equal(reply.text, '[accepted]');
    assert.equal(await countRows(stack.pool, 'events', settleId(item)), 1);
    assert.equal((await workflowResult(settleId(item))).outcome, 'applied');
    assert.equal(await paymentStatusOf(stack, shipmentId), 'authorized');
  });

  test('the same item again (an Adyen retry; a resend after Temporal forgot the run) has no second effect', async () => {
    const shipmentId = await newShipment();
    const auth = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }), key);
    const capture = signAdyen(
      adyenItem({
        eventCode: 'CAPTURE',
        originalReference: String(auth.pspReference),
        merchantReference: shipmentId,
      }),
      key,
    );
    assert.equal((await send([auth, capture])).text, '[accepted]');
    await workflowResult(settleId(capture));

    assert.equal((await send([capture])).text, '[accepted]');
    const handle = await stack.client.workflow.start('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: paymentWorkflowId(settleId(capture)),
      args: [{ event: (adaptAdyenItem(capture) as { event: unknown }).event }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
    assert.equal(((await handle.result()) as PaymentWorkflowResult).claimExisted, true);
    assert.equal((await send([capture])).text, '[accepted]');

    assert.equal(await countRows(stack.pool, 'events', settleId(capture)), 1);
    assert.equal(await countRows(stack.pool, 'claims', settleId(capture)), 1);
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.event_id]),
      [['capture', 12500, settleId(capture)]],
    );
  });

  test('a tampered item, a wrong or retired key, a missing signature or wrong basic auth refuse the whole batch and write nothing', async () => {
    const shipmentId = await newShipment();
    const good = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }), key);
    const tampered = {
      ...signAdyen(adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId }), key),
    };
    tampered.amount = { value: 1, currency: 'EUR' };
    const wrongKey = signAdyen(
      adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId }),
      newAdyenKey(),
    );
    const retired = signAdyen(adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId }), retiredKey);
    const unsigned = adyenItem({ eventCode: 'CAPTURE', merchantReference: shipmentId });

    for (const bad of [tampered, wrongKey, retired, unsigned]) {
      const reply = await send([good, bad]);
      assert.equal(reply.status, 401, reply.text);
      assert.equal(reply.body.error, 'invalid_signature');
      assert.match(String(reply.body.message), /notificationItems\.1: HMAC/);
    }
    for (const credentials of [undefined, 'adyen-notifications:wrong']) {
      const reply = await postAdyen(stack, adyenBatch([good]), { basicAuth: credentials });
      assert.equal(reply.status, 401);
      assert.equal(reply.body.error, 'unauthorized');
    }
    for (const item of [good, tampered, wrongKey, retired, unsigned]) {
      assert.equal(await countRows(stack.pool, 'events', settleId(item)), 0);
    }
    assert.equal(await paymentStatusOf(stack, shipmentId), 'pending');
  });

  test('an unknown event code and an unsuccessful CAPTURE are acknowledged and ignored, writing nothing', async () => {
    const report = signAdyen(adyenItem({ eventCode: 'REPORT_AVAILABLE', merchantReference: 'report' }), key);
    const failedCapture = signAdyen(adyenItem({ eventCode: 'CAPTURE', success: 'false' }), key);
    assert.equal((await send([report, failedCapture])).text, '[accepted]');
    assert.equal(await countRows(stack.pool, 'events', settleId(report)), 0);
    assert.equal(await countRows(stack.pool, 'events', settleId(failedCapture)), 0);
  });

  test('a batch with one repeat and one new item is acknowledged once both are admitted, each item takes effect once', async () => {
    const shipmentId = await newShipment();
    const auth = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }), key);
    const capture = signAdyen(
      adyenItem({
        eventCode: 'CAPTURE',
        originalReference: String(auth.pspReference),
        merchantReference: shipmentId,
      }),
      key,
    );
    const refund = signAdyen(
      adyenItem({
        eventCode: 'REFUND',
        originalReference: String(auth.pspReference),
        merchantReference: shipmentId,
        value: 3000,
      }),
      nextKey,
    );
    assert.equal((await send([auth, capture])).text, '[accepted]');
    await workflowResult(settleId(capture));

    const reply = await send([capture, refund]);
    assert.equal(reply.text, '[accepted]');
    // Acknowledged means admitted: both event rows exist the moment [accepted] is read.
    assert.equal(await countRows(stack.pool, 'events', settleId(refund)), 1);
    await workflowResult(settleId(refund));
    assert.equal((await send([capture, refund])).text, '[accepted]');
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount]),
      [
        ['capture', 12500],
        ['refund', 3000],
      ],
    );
    assert.equal(await paymentStatusOf(stack, shipmentId), 'refunded');
  });

  test('a batch during a Temporal outage is not acknowledged (503, Retry-After); its retry is acknowledged and takes effect once', async () => {
    const shipmentId = await newShipment();
    const auth = signAdyen(adyenItem({ eventCode: 'AUTHORISATION', merchantReference: shipmentId }), key);
    const capture = signAdyen(
      adyenItem({
        eventCode: 'CAPTURE',
        originalReference: String(auth.pspReference),
        merchantReference: shipmentId,
      }),
      key,
    );

    await temporal.kill();
    const refused = await send([auth, capture]);
    assert.equal(refused.status, 503);
    assert.notEqual(refused.text, '[accepted]');
    assert.equal(refused.body.error, 'temporal_unavailable');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.equal(await countRows(stack.pool, 'events', settleId(auth)), 0);
    assert.equal(await countRows(stack.pool, 'events', settleId(capture)), 0);

    temporal = await startTemporalDevServer({ cliPath, port, dbFile });
    const accepted = await waitFor(
      'Adyen’s retry to be acknowledged',
      async () => {
        const reply = await send([auth, capture]);
        return reply.text === '[accepted]' && reply;
      },
      300_000,
    );
    assert.equal(accepted.status, 200);
    await workflowResult(settleId(capture));
    assert.equal((await send([auth, capture])).text, '[accepted]');
    assert.equal(await countRows(stack.pool, 'events', settleId(auth)), 1);
    assert.equal(await countRows(stack.pool, 'claims', settleId(capture)), 1);
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => entry.kind),
      ['capture'],
    );
    assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
  });
});
