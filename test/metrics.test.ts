import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { connectClient } from '../src/client';
import { addShipments } from '../src/db/shipments';
import type { SloFigures } from '../src/db/slo';
import { paymentWorkflowId } from '../src/domain/ids';
import { buildGateway } from '../src/gateway/server';
import { freePort } from '../testkit/free-port';
import { logger } from '../src/lib/logger';
import { startMetricsServer } from '../src/metrics/metrics-server';
import { parsePrometheusText, sumOf, type Sample } from '../src/metrics/prometheus-text';
import type { SimulateSummary } from '../src/stack/simulate';
import { newSecret, paymentEvent, postWebhook, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import { runSettle, stackEnv } from './support/settle-cli';

const stack = useTestStack();

async function scrape(url = `${stack.gatewayUrl}/metrics`): Promise<{ text: string; samples: Sample[] }> {
  // The gateway's /metrics on PORT needs the API token; the worker's asks none.
  const response = await fetch(url, { headers: { authorization: `Bearer ${stack.apiToken}` } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await response.text();
  return { text, samples: parsePrometheusText(text) };
}

const OUTCOMES = ['accepted', 'duplicate', 'ignored', 'conflict', 'rejected', 'unavailable'];

function webhookCounts(samples: Sample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== 'settle_webhooks_total') continue;
    const key = s.labels.error ? `${s.labels.outcome}:${s.labels.error}` : s.labels.outcome!;
    counts[key] = (counts[key] ?? 0) + s.value;
  }
  return counts;
}

function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(after)
      .map((key) => [key, after[key]! - (before[key] ?? 0)] as const)
      .filter(([, value]) => value !== 0),
  );
}

describe('GET /metrics', () => {
  test('counts every webhook by outcome and error code, exactly as sent', async () => {
    const shipmentId = uniqueId('SHP');
    await addShipments(stack.pool, [shipmentId]);
    const before = await scrape();

    const events = [paymentEvent({ shipmentId }), paymentEvent(), paymentEvent()];
    for (const event of events) assert.equal((await postWebhook(stack, event)).status, 202);
    assert.equal((await postWebhook(stack, events[0])).body.status, 'duplicate');
    assert.equal((await postWebhook(stack, events[1])).body.status, 'duplicate');
    assert.equal(
      (await postWebhook(stack, { id: uniqueId('evt'), type: 'charge.created' })).body.status,
      'ignored',
    );
    const reused = { ...events[0]!, data: { ...events[0]!.data, amount: 1 } };
    assert.equal((await postWebhook(stack, reused)).status, 409);
    assert.equal((await postWebhook(stack, paymentEvent(), { secret: newSecret() })).status, 401);
    assert.equal((await postWebhook(stack, paymentEvent(), { secret: newSecret() })).status, 401);
    assert.equal((await postWebhook(stack, undefined, { rawBody: '{oops' })).status, 400);
    assert.equal(
      (await postWebhook(stack, paymentEvent(), { headers: { 'content-type': 'text/plain' } })).status,
      415,
    );
    assert.equal((await postWebhook(stack, undefined, { rawBody: '', method: 'GET' })).status, 405);

    // A gateway whose Temporal is down answers 503; it counts in the same process registry.
    const client = await connectClient({
      temporalAddress: `127.0.0.1:${await freePort()}`,
      temporalNamespace: 'default',
    });
    const down = buildGateway({
      pool: stack.pool,
      client,
      taskQueue: stack.taskQueue,
      webhookSecrets: [stack.secret],
      apiToken: stack.apiToken,
      logger,
    });
    await down.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(down.server.address() as AddressInfo).port}`;
      assert.equal(
        (await postWebhook({ gatewayUrl: url, secret: stack.secret }, paymentEvent())).status,
        503,
      );
    } finally {
      await down.close();
      await client.connection.close();
    }

    for (const event of events) await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    // A repeat the claim refuses (Temporal no longer remembering the ID is the same case).
    await stack.client.workflow.execute('paymentWorkflow', {
      taskQueue: stack.taskQueue,
      workflowId: paymentWorkflowId(events[0]!.id),
      args: [{ event: events[0] }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
    // Another payload under a claimed ID, run by Temporal anyway: the reconcile transaction refuses it.
    const altered = { ...events[0]!, data: { ...events[0]!.data, amount: 1 } };
    await assert.rejects(
      stack.client.workflow.execute('paymentWorkflow', {
        taskQueue: stack.taskQueue,
        workflowId: `${paymentWorkflowId(altered.id)}:conflict-probe`,
        args: [{ event: altered }],
      }),
    );

    const after = await scrape();
    assert.deepEqual(delta(webhookCounts(before.samples), webhookCounts(after.samples)), {
      accepted: 3,
      duplicate: 2,
      ignored: 1,
      'conflict:idempotency_key_reused': 1,
      'rejected:invalid_signature': 2,
      'rejected:invalid_event': 1,
      'rejected:unsupported_media_type': 1,
      'rejected:method_not_allowed': 1,
      'unavailable:temporal_unavailable': 1,
    });
    const ackCount = (samples: Sample[]) => sumOf(samples, 'settle_webhook_ack_seconds_count');
    assert.equal(ackCount(after.samples) - ackCount(before.samples), 13);
    const changed = (name: string, labels: Record<string, string> = {}) =>
      sumOf(after.samples, name, labels) - sumOf(before.samples, name, labels);
    assert.equal(changed('settle_duplicate_claims_total'), 1);
    assert.equal(changed('settle_event_to_commit_seconds_count'), 3);
    assert.equal(changed('settle_reconcile_outcomes_total', { outcome: 'applied' }), 2);
    assert.equal(changed('settle_reconcile_outcomes_total', { outcome: 'unmatched' }), 2);
    // Each failed attempt counts: the local one, then the durable activity's (non-retryable).
    assert.equal(changed('settle_transaction_failures_total', { code: 'idempotency_key_reused' }), 2);
    assert.equal(changed('settle_transaction_failures_total'), 2);
    for (const name of [
      'settle_transaction_failures_total',
      'settle_outbox_oldest_pending_age_seconds',
      'settle_reminders_oldest_overdue_age_seconds',
    ]) {
      assert.match(after.text, new RegExp(`^# TYPE ${name} `, 'm'));
    }
    assert.ok(sumOf(after.samples, 'settle_outbox_pending') >= 2, 'the applied event left outbox rows');
    // The Temporal SDK's own metrics, from the worker running in this process.
    assert.match(after.text, /^# TYPE temporal_\w+ (counter|gauge|histogram)$/m);
    assert.ok(
      after.samples.some((s) => s.name.startsWith('temporal_') && s.labels.task_queue === stack.taskQueue),
    );

    // settle stats: the same figures, from PostgreSQL and from this /metrics.
    const stats = await runSettle(
      ['stats', '--json', '--metrics-url', `${stack.gatewayUrl}/metrics`],
      stackEnv(stack),
    );
    assert.equal(stats.code, 0, stats.stderr);
    const figures = JSON.parse(stats.stdout) as SloFigures & { live: { webhooks: Record<string, number> } };
    assert.equal(figures.events.by_source.webhook, 3);
    assert.equal(figures.duplicate_deliveries, 2);
    assert.equal(figures.conflicting_deliveries, 1);
    assert.equal(figures.claims.repeat_claims, 1);
    assert.equal(figures.event_to_commit_seconds.count, 3);
    assert.equal(typeof figures.event_to_commit_seconds.p99, 'number');
    assert.deepEqual(
      Object.fromEntries(OUTCOMES.map((o) => [o, figures.live.webhooks[o]! >= 1])),
      Object.fromEntries(OUTCOMES.map((o) => [o, true])),
    );
    const human = await runSettle(['stats'], stackEnv(stack));
    assert.match(human.stdout, /event → commit\s+p50/);
  });

  test('simulated provider traffic is counted the way the simulator saw it answered', async () => {
    const before = webhookCounts((await scrape()).samples);
    const result = await runSettle(
      [
        'simulate',
        '--gateway',
        stack.gatewayUrl,
        '--count',
        '45',
        '--rate',
        '300',
        '--duplicates',
        '0.3',
        '--late',
        '0.2',
        '--out-of-order',
        '0.5',
        '--seed',
        '7',
        '--add-shipments',
        '--json',
      ],
      stackEnv(stack),
    );
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout) as SimulateSummary;
    assert.equal(summary.sent, 45 + summary.planned.immediate_duplicates + summary.planned.late_replays);
    assert.ok(summary.planned.immediate_duplicates > 0 && summary.planned.late_replays > 0);
    assert.ok(summary.planned.out_of_order_payments > 0);
    assert.deepEqual(summary.responses, {
      accepted: 45,
      duplicate: summary.planned.immediate_duplicates + summary.planned.late_replays,
    });
    assert.deepEqual(delta(before, webhookCounts((await scrape()).samples)), summary.responses);
  });

  test('settle worker serves its own /metrics with the SDK metrics', async () => {
    const server = await startMetricsServer({ port: 0, host: '127.0.0.1' });
    try {
      const { text } = await scrape(`${server.url}/metrics`);
      assert.match(text, /^# TYPE settle_duplicate_claims_total counter$/m);
      assert.match(text, /^temporal_\w+/m);
      // The figures read from PostgreSQL are the gateway's alone: a sum over processes counts them once.
      assert.doesNotMatch(
        text,
        /^settle_(outbox_pending|open_exceptions|outbox_oldest_pending_age_seconds)\b/m,
      );
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    } finally {
      await server.close();
    }
  });
});
