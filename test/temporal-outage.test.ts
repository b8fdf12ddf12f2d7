import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { freePort } from '../testkit/free-port';
import { startTemporalDevServer, type DevServer } from '../src/stack/temporal-dev-server';
import type { PaymentWorkflowResult } from '../src/workflows';
import {
  countRows,
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';

// A Temporal server of this file's own, persisted to a file so it can be stopped and restarted.
const cliPath = process.env.SETTLE_TEMPORAL_CLI!;
const scratch = mkdtempSync(join(tmpdir(), 'settle-outage-'));
const dbFile = join(scratch, 'temporal.db');
let port: number;
let temporal: DevServer;
let stack: TestStack;

before(async () => {
  port = await freePort();
  temporal = await startTemporalDevServer({ cliPath, port, dbFile });
  stack = await startTestStack({ temporalAddress: temporal.address });
});
after(async () => {
  await stack.close();
  await temporal.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('with Temporal down the gateway answers 503 with Retry-After and writes nothing; after restart the same delivery is applied once', async () => {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId });

  await temporal.kill();
  const refused = await postWebhook(stack, event);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.error, 'temporal_unavailable');
  assert.ok(Number(refused.headers.get('retry-after')) > 0);
  assert.equal(await countRows(stack.pool, 'events', event.id), 0);
  assert.equal(await countRows(stack.pool, 'claims', event.id), 0);

  const ready = await fetch(`${stack.gatewayUrl}/readyz`);
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: 'not_ready', postgres: true, temporal: false });

  temporal = await startTemporalDevServer({ cliPath, port, dbFile });

  // The provider retries the same delivery; the gateway's connection recovers on its own.
  const accepted = await waitFor(
    'the gateway to accept again',
    async () => {
      const response = await postWebhook(stack, event);
      return response.status === 202 && response;
    },
    300_000,
  );
  assert.equal(accepted.body.status, 'accepted');
  const result: PaymentWorkflowResult = await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();
  assert.equal(result.outcome, 'applied');

  const again = await postWebhook(stack, event);
  assert.equal(again.status, 200);
  assert.equal(again.body.status, 'duplicate');
  assert.equal(await countRows(stack.pool, 'events', event.id), 1);
  assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
  assert.equal(await countRows(stack.pool, 'ledger_entries', event.id), 1);
});
