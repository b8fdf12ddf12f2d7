import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import {
  PaymentEventTypeKey,
  PaymentIdKey,
  SettleDeliveryStateKey,
  SettleOutcomeKey,
  ShipmentIdKey,
} from '../src/workflows/search-attributes';
import { freePort } from '../testkit/free-port';
import { renderMetrics } from '../src/metrics/settle-metrics';
import { startTemporalDevServer } from '../src/stack/temporal-dev-server';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import { runCommand, runSettle, stackEnv } from './support/settle-cli';

/** The `temporal` CLI, as an operator runs it; a failure shows its output. */
async function temporalCli(args: string[]): Promise<{ stdout: string }> {
  const run = await runCommand(cliPath, args, {});
  assert.equal(run.code, 0, run.stderr);
  return run;
}
const cliPath = process.env.SETTLE_TEMPORAL_CLI!;

/** The shipments of this file's runs, one per story an operator looks for. */
const shipments = {
  delivered: uniqueId('SHP'),
  refused: uniqueId('SHP'),
  stuck: uniqueId('SHP'),
};

let stack: TestStack;
let carrier: Receiver;
let erp: Receiver;
/** The carrier answers 500 for the stuck shipment until this turns true. */
let carrierRecovered = false;

before(async () => {
  carrier = await startReceiver((request) => {
    if (request.json.shipment_id === shipments.refused && request.json.action === 'release_hold') {
      return { status: 409 };
    }
    if (request.json.shipment_id === shipments.stuck && !carrierRecovered) return { status: 500 };
    return { status: 200 };
  });
  erp = await startReceiver();
  stack = await startTestStack({ config: { carrierUrl: carrier.url, erpUrl: erp.url } });
  await addShipments(stack.pool, Object.values(shipments));
});
after(async () => {
  await stack.close();
  await carrier.close();
  await erp.close();
});

async function send(shipmentId: string, type = 'payment.settled', paymentId?: string) {
  const event = paymentEvent({ shipmentId, type, amount: 12500, paymentId });
  assert.equal((await postWebhook(stack, event)).status, 202);
  return { event, workflowId: paymentWorkflowId(event.id) };
}

/** Workflow IDs a list query finds on this file's task queue, through the SDK client. */
async function listThroughClient(client: Client, taskQueue: string, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of client.workflow.list({ query: `${query} AND TaskQueue="${taskQueue}"` })) {
    ids.push(execution.workflowId);
  }
  return ids.sort();
}

/** The same query through the `temporal` CLI, as an operator types it. */
async function listThroughCli(address: string, taskQueue: string, query: string): Promise<string[]> {
  const { stdout } = await temporalCli([
    'workflow',
    'list',
    '--address',
    address,
    '--query',
    `${query} AND TaskQueue="${taskQueue}"`,
    '--output',
    'json',
  ]);
  const rows = stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : [];
  return rows.map((row) => row.execution.workflowId).sort();
}

/**
 * Visibility is eventually consistent: waits until both the client and the CLI find exactly `expected`,
 * then asserts it (so a timeout shows what they found instead).
 */
async function assertListed(query: string, expected: string[], timeoutMs = 300_000) {
  const want = [...expected].sort();
  let found: { client: string[]; cli: string[] } = { client: [], cli: [] };
  await waitFor(
    `${query} to list ${want.join(', ')}`,
    async () => {
      found = {
        client: await listThroughClient(stack.client, stack.taskQueue, query),
        cli: await listThroughCli(stack.config.temporalAddress, stack.taskQueue, query),
      };
      return (
        JSON.stringify(found.client) === JSON.stringify(want) &&
        JSON.stringify(found.cli) === JSON.stringify(want)
      );
    },
    timeoutMs,
  ).catch(() => undefined);
  assert.deepEqual(found, { client: want, cli: want }, query);
}

/** The summaries (user metadata) of a run's history events, decoded. */
async function summaries(workflowId: string): Promise<string[]> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .map((event: temporal.api.history.v1.IHistoryEvent) => event.userMetadata?.summary?.data)
    .filter((data): data is Uint8Array => Boolean(data))
    .map((data) => JSON.parse(Buffer.from(data).toString('utf8')) as string);
}

/** The names of the search attributes a run upserted, in order, past the patches' TemporalChangeVersion. */
async function upsertedAttributes(workflowId: string): Promise<string[]> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .flatMap((event) =>
      Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    )
    .filter((name) => name !== 'TemporalChangeVersion');
}

describe('the Temporal UI finds runs by their business', () => {
  test('ShipmentId, SettleOutcome and SettleDeliveryState list exactly the right runs, kept current as they move', async () => {
    const captured = await send(shipments.delivered, 'payment.captured');
    await stack.client.workflow.getHandle(captured.workflowId).result();
    // The same payment settling: its capture is already in the ledger, so nothing is left to deliver.
    const settled = await send(shipments.delivered, 'payment.settled', captured.event.data.payment_id);
    await stack.client.workflow.getHandle(settled.workflowId).result();
    const refused = await send(shipments.refused);
    await stack.client.workflow.getHandle(refused.workflowId).result();
    const stuck = await send(shipments.stuck);
    // A shipment settle has never heard of: the claim's outcome is `unmatched`.
    const unmatched = await send(uniqueId('SHP'));
    await stack.client.workflow.getHandle(unmatched.workflowId).result();

    // "All events of SHP-…": both of the shipment's runs, nothing else.
    await assertListed(`ShipmentId="${shipments.delivered}"`, [captured.workflowId, settled.workflowId]);
    // "Everything that needs review": the run whose carrier refused the release, compensated.
    await assertListed(`SettleOutcome="needs_review"`, [refused.workflowId]);
    await assertListed(`SettleDeliveryState="compensated"`, [refused.workflowId]);
    await assertListed(`SettleOutcome="unmatched"`, [unmatched.workflowId]);
    // "Everything stuck": the run whose carrier keeps answering 500.
    await assertListed(`SettleDeliveryState="retrying"`, [stuck.workflowId]);
    // The happy path shows nothing: the runs without the attributes are those applied and delivered.
    await assertListed(`SettleDeliveryState="delivered"`, []);
    await assertListed(`SettleOutcome="applied"`, []);
    await assertListed(
      `ShipmentId="${shipments.delivered}" AND SettleOutcome IS NULL AND SettleDeliveryState IS NULL`,
      [captured.workflowId, settled.workflowId],
    );
    await waitFor(
      'the carrier to have refused the stuck release twice',
      async () => carrier.requests.filter((r) => r.json.shipment_id === shipments.stuck).length >= 2,
    );

    // The run's attributes as the UI's detail page shows them.
    const captureRun = await stack.client.workflow.getHandle(captured.workflowId).describe();
    assert.equal(captureRun.typedSearchAttributes.get(ShipmentIdKey), shipments.delivered);
    assert.equal(captureRun.typedSearchAttributes.get(PaymentIdKey), captured.event.data.payment_id);
    assert.equal(captureRun.typedSearchAttributes.get(PaymentEventTypeKey), 'payment.captured');
    assert.equal(captureRun.typedSearchAttributes.get(SettleOutcomeKey), undefined);
    assert.equal(captureRun.typedSearchAttributes.get(SettleDeliveryStateKey), undefined);
    assert.equal(await captureRun.staticSummary(), `payment.captured · ${shipments.delivered} · 125.00 EUR`);
    // Applied with nothing to deliver: the happy path too.
    const settledRun = await stack.client.workflow.getHandle(settled.workflowId).describe();
    assert.equal(settledRun.typedSearchAttributes.get(SettleOutcomeKey), undefined);
    assert.equal(settledRun.typedSearchAttributes.get(SettleDeliveryStateKey), undefined);
    // The happy path costs no upsert of settle's attributes (a patch's TemporalChangeVersion is free).
    assert.deepEqual(await upsertedAttributes(captured.workflowId), []);
    assert.deepEqual(await upsertedAttributes(settled.workflowId), []);

    // The run (its started event), then its activities (local ones too): the first pass (reconcile and
    // the first deliveries), then any delivery by target and action; the durable retry says why it
    // runs, so the failed first attempt before it is not taken for a good one.
    assert.deepEqual(await summaries(captured.workflowId), [
      `payment.captured · ${shipments.delivered} · 125.00 EUR`,
      `reconcile payment.captured · ${shipments.delivered}, then deliver`,
    ]);
    const stuckSummaries = await summaries(stuck.workflowId);
    assert.ok(
      stuckSummaries.includes(`reconcile payment.settled · ${shipments.stuck}, then deliver`),
      stuckSummaries.join(' | '),
    );
    assert.ok(
      stuckSummaries.includes(
        'carrier release_hold · retrying, first attempt failed: downstream_unavailable (HTTP 500)',
      ),
      stuckSummaries.join(' | '),
    );
    const refusedSummaries = await summaries(refused.workflowId);
    assert.ok(
      refusedSummaries.includes(
        'carrier release_hold · first attempt refused: downstream_rejected (HTTP 409); the durable attempt records the refusal',
      ),
      refusedSummaries.join(' | '),
    );
    assert.ok(refusedSummaries.includes('carrier hold · compensate: re-hold the shipment'));
    assert.ok(refusedSummaries.includes('compensate: reverse ledger entries, outcome needs_review'));

    // Each attempt is counted by target, action, outcome and code, so a 500 is not a 409.
    const metrics = await renderMetrics();
    const count = (labels: string) =>
      Number(metrics.match(new RegExp(`^settle_deliveries_total\\{${labels}\\} (\\d+)`, 'm'))?.[1] ?? 0);
    assert.ok(count('target="carrier",action="release_hold",outcome="retry",code="500"') >= 2);
    assert.ok(count('target="carrier",action="release_hold",outcome="permanent",code="409"') >= 1);
    assert.ok(count('target="carrier",action="hold",outcome="delivered",code="200"') >= 1);
    assert.ok(count('target="erp",action="post_ledger_entry",outcome="delivered",code="200"') >= 1);

    // The carrier recovers: the stuck run leaves `retrying` for `delivered` by itself (kept current);
    // its outcome was `applied` all along, so it has no SettleOutcome.
    carrierRecovered = true;
    await stack.client.workflow.getHandle(stuck.workflowId).result();
    await assertListed(`SettleDeliveryState="retrying"`, []);
    await assertListed(`SettleDeliveryState="delivered"`, [stuck.workflowId]);
    const stuckRun = await stack.client.workflow.getHandle(stuck.workflowId).describe();
    assert.equal(stuckRun.typedSearchAttributes.get(SettleOutcomeKey), undefined);
  });

  test('a delivery whose target has no URL on the worker is listed as not_configured', async () => {
    const onlyCarrier = await startTestStack({ config: { carrierUrl: carrier.url } });
    try {
      const shipmentId = uniqueId('SHP');
      await addShipments(onlyCarrier.pool, [shipmentId]);
      const event = paymentEvent({ shipmentId, type: 'payment.settled' });
      assert.equal((await postWebhook(onlyCarrier, event)).status, 202);
      const workflowId = paymentWorkflowId(event.id);
      await onlyCarrier.client.workflow.getHandle(workflowId).result();
      const query = `SettleDeliveryState="not_configured" AND TaskQueue="${onlyCarrier.taskQueue}"`;
      let found: string[] = [];
      await waitFor(
        'the not_configured run to be listed',
        async () => {
          found = await listThroughCli(onlyCarrier.config.temporalAddress, onlyCarrier.taskQueue, query);
          return found.length > 0;
        },
        300_000,
      ).catch(() => undefined);
      assert.deepEqual(found, [workflowId]);
      assert.match(
        await renderMetrics(),
        /^settle_deliveries_total\{target="erp",action="post_ledger_entry",outcome="not_configured",code="none"\} [1-9]/m,
      );
    } finally {
      await onlyCarrier.close();
    }
  });
});

describe('settle worker', () => {
  test('refuses to start without its downstream targets, naming each missing variable', async () => {
    const base = stackEnv(stack, { SETTLE_METRICS_PORT: '0' });
    delete base.SETTLE_CARRIER_URL;
    delete base.SETTLE_ERP_URL;
    const neither = await runSettle(['worker'], base, 300_000);
    assert.equal(neither.code, 1, neither.stderr);
    assert.match(neither.stderr, /SETTLE_CARRIER_URL and SETTLE_ERP_URL are not set/);

    const noErp = await runSettle(['worker'], { ...base, SETTLE_CARRIER_URL: carrier.url }, 300_000);
    assert.equal(noErp.code, 1, noErp.stderr);
    assert.match(noErp.stderr, /SETTLE_ERP_URL is not set/);
    assert.doesNotMatch(noErp.stderr, /SETTLE_CARRIER_URL/);
  });
});

describe('settle migrate', () => {
  test("registers settle's search attributes on a server that lacks them, once", async () => {
    const server = await startTemporalDevServer({
      cliPath,
      port: await freePort(),
      registerSearchAttributes: false,
    });
    try {
      const env = { ...stackEnv(stack), TEMPORAL_ADDRESS: server.address };
      const first = await runSettle(['migrate', '--json'], env);
      assert.equal(first.code, 0, first.stderr);
      const names = ['ShipmentId', 'PaymentId', 'PaymentEventType', 'SettleOutcome', 'SettleDeliveryState'];
      assert.deepEqual(JSON.parse(first.stdout).search_attributes, {
        namespace: 'default',
        added: names,
        present: [],
      });
      const second = await runSettle(['migrate'], env);
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /search attributes in namespace default: all present/);

      const { stdout } = await temporalCli([
        'operator',
        'search-attribute',
        'list',
        '--address',
        server.address,
        '--output',
        'json',
      ]);
      for (const name of names) assert.match(stdout, new RegExp(`"${name}"[^}]*Keyword`, 'i'));
    } finally {
      await server.stop();
    }
  });
});
