import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { ImportSummary } from '../src/app/import';
import type { SimulateSummary } from '../src/stack/simulate';
import { freePort } from '../testkit/free-port';
import { startTestStack, uniqueId, waitFor, type TestStack } from '../testkit/harness';
import {
  createPaypalCertificates,
  paypalCapture,
  paypalEvent,
  signPaypal,
  type PaypalCertificates,
} from '../testkit/paypal-api';
import { ledgerOf, paymentStatusOf } from './support/providers';
import { finished, runSettle, spawnSettle, stackEnv, watchOutput } from './support/settle-cli';

/**
 * settle configured for PayPal and nothing else: no Standard Webhooks secret, no other provider's
 * variable. The gateway must start and take a signed PayPal event end to end, and `settle import`
 * and `settle simulate` must take `--provider paypal`.
 */
const webhookId = '7PA52781JU389440W';
let certs: PaypalCertificates;
let stack: TestStack;
let dir: string;
/** Only PayPal's variables, over the stack's database, Temporal and task queue. */
let env: NodeJS.ProcessEnv;
let gatewayUrl: string;
let stopGateway: () => Promise<void>;

before(async () => {
  certs = await createPaypalCertificates();
  dir = mkdtempSync(join(tmpdir(), 'settle-paypal-alone-'));
  writeFileSync(join(dir, 'paypal-cert.pem'), certs.paypal.cert);
  writeFileSync(join(dir, 'paypal-key.pem'), certs.paypal.key);
  stack = await startTestStack({
    config: { paypalWebhookId: webhookId, paypalCertPath: join(dir, 'paypal-cert.pem') },
  });
  const port = await freePort();
  env = stackEnv(stack, {
    // Unset: the Standard Webhooks secret the stack's environment would bring.
    SETTLE_WEBHOOK_SECRETS: '',
    PORT: String(port),
    SETTLE_METRICS_PORT: '0',
    SETTLE_PAYPAL_WEBHOOK_ID: webhookId,
    SETTLE_PAYPAL_CERT_PATH: join(dir, 'paypal-cert.pem'),
  });
  gatewayUrl = `http://127.0.0.1:${port}`;
  const gateway = spawnSettle(['gateway'], env);
  const output = watchOutput(gateway);
  const exited = finished(gateway);
  stopGateway = async () => {
    gateway.kill('SIGTERM');
    await exited.catch(() => undefined);
  };
  await output.waitForOutput('the gateway to listen', () => output.text.includes('gateway listening'));
  await waitFor('the gateway', async () => (await fetch(`${gatewayUrl}/healthz`).catch(() => undefined))?.ok);
});
after(async () => {
  await stopGateway?.();
  await stack?.close();
});

async function newShipment(): Promise<string> {
  const id = uniqueId('SHP');
  await addShipments(stack.pool, [id]);
  return id;
}

describe('PayPal alone', () => {
  test('the gateway starts with only PayPal configured and applies a signed capture once', async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, '42.50', 'EUR'));
    const body = JSON.stringify(event);
    const post = (headers: Record<string, string>) =>
      fetch(`${gatewayUrl}/webhooks/paypal`, { method: 'POST', headers, body });

    const accepted = await post(signPaypal(body, { webhookId, key: certs.paypal.key }));
    assert.equal(accepted.status, 202, await accepted.clone().text());
    assert.equal(((await accepted.json()) as { event_id: string }).event_id, event.id);
    const run = await stack.client.workflow.getHandle(paymentWorkflowId(String(event.id))).result();
    assert.equal((run as { outcome: string }).outcome, 'applied');
    assert.equal(await paymentStatusOf(stack, shipmentId), 'captured');
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.currency]),
      [['capture', 4250, 'EUR']],
    );

    // PayPal's retry (a new transmission of the same event): a duplicate, no second effect.
    const again = await post(signPaypal(body, { webhookId, key: certs.paypal.key }));
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as { status: string }).status, 'duplicate');
    assert.equal((await ledgerOf(stack, shipmentId)).length, 1);

    // Signed with a key that is not the configured certificate's: refused, nothing admitted.
    const forged = await post(signPaypal(body, { webhookId, key: certs.forged.key }));
    assert.equal(forged.status, 401);
  });

  test('settle import --provider paypal reads PayPal events, one a line, and applies each once', async () => {
    const shipmentId = await newShipment();
    const event = paypalEvent('PAYMENT.CAPTURE.COMPLETED', paypalCapture(shipmentId, '10.00', 'USD'));
    const ignored = paypalEvent('PAYMENT.AUTHORIZATION.CREATED', paypalCapture(shipmentId, '10.00', 'USD'));
    const file = join(dir, `paypal-export-${uniqueId('f')}.jsonl`);
    writeFileSync(file, `${JSON.stringify(event)}\n${JSON.stringify(ignored)}\n${JSON.stringify(event)}\n`);

    const run = await runSettle(['import', file, '--provider', 'paypal', '--json'], env);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as ImportSummary;
    assert.deepEqual(summary.counts, { accepted: 1, duplicate: 1, ignored: 1, rejected: 0, unavailable: 0 });
    await waitFor(
      'the imported capture',
      async () => (await paymentStatusOf(stack, shipmentId)) === 'captured',
    );
    assert.deepEqual(
      (await ledgerOf(stack, shipmentId)).map((entry) => [entry.kind, entry.amount, entry.currency]),
      [['capture', 1000, 'USD']],
    );
  });

  test('settle simulate --provider paypal signs with the given key and the gateway takes every event', async () => {
    const run = await runSettle(
      [
        'simulate',
        '--provider',
        'paypal',
        '--signing-key',
        join(dir, 'paypal-key.pem'),
        '--gateway',
        gatewayUrl,
        '--count',
        '6',
        '--rate',
        '50',
        '--duplicates',
        '0',
        '--late',
        '0',
        '--add-shipments',
        '--json',
      ],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as SimulateSummary;
    // Per payment: authorized (PayPal's PAYMENT.AUTHORIZATION.CREATED, which settle ignores), captured, refunded.
    assert.deepEqual(summary.responses, { ignored: 2, accepted: 4 });
    assert.equal(summary.network_errors, 0);

    // Without the key it refuses, saying what to pass.
    const refused = await runSettle(
      ['simulate', '--provider', 'paypal', '--gateway', gatewayUrl, '--count', '1'],
      env,
    );
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /--signing-key/);
  });
});
