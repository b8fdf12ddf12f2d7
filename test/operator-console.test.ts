import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ExceptionRow } from '../src/db/exceptions';
import { addShipments } from '../src/db/shipments';
import { writeDeliveryStuckAfter } from '../src/db/settings';
import { freePort } from '../testkit/free-port';
import { paymentWorkflowId } from '../src/domain/ids';
import { parsePrometheusText, sumOf } from '../src/metrics/prometheus-text';
import type { ReplayResult } from '../src/app/replay';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';
import { finished, runSettle, spawnSettle, stackEnv } from './support/settle-cli';

/** Shipments whose carrier release answers 500 until taken out of this set. */
const carrierDownFor = new Set<string>();
let carrier: Receiver;
let erp: Receiver;
let stack: TestStack;
/**
 * What the CLI is given: another stuck threshold (1h) than the stack's gateway (2s), as an operator's
 * laptop may have; every surface must follow the deployment's (the gateway's, in deployment_settings).
 */
let env: NodeJS.ProcessEnv;

before(async () => {
  carrier = await startReceiver((request) => ({
    status: carrierDownFor.has(String(request.json.shipment_id)) ? 500 : 200,
  }));
  erp = await startReceiver();
  stack = await startTestStack({
    config: { carrierUrl: carrier.url, erpUrl: erp.url, deliveryStuckAfterMs: 2_000 },
  });
  env = stackEnv(stack, { SETTLE_DELIVERY_STUCK_AFTER: '1h' });
});

after(async () => {
  await stack.close();
  await carrier.close();
  await erp.close();
});

type ExceptionList = {
  exceptions: (ExceptionRow & { next_step: string })[];
  runs_checked: boolean;
  count: number;
};

async function exceptions(...args: string[]): Promise<ExceptionList> {
  const result = await runSettle(['exceptions', '--json', ...args], env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as ExceptionList;
}

async function openByKind(): Promise<Record<string, number>> {
  const result = await runSettle(['stats', '--json'], env);
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { open_exceptions: Record<string, number> }).open_exceptions;
}

async function gauge(kind: string): Promise<number> {
  const text = await (
    await fetch(`${stack.gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${stack.apiToken}` } })
  ).text();
  return sumOf(parsePrometheusText(text), 'settle_open_exceptions', { kind });
}

async function carrierRow(eventId: string) {
  const { rows } = await stack.pool.query<{ status: string; attempts: number }>(
    `SELECT status, attempts FROM outbox WHERE event_id = $1::text AND target = 'carrier'`,
    [eventId],
  );
  return rows[0];
}

async function applyingEvent(options: { carrierDown: boolean }) {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  if (options.carrierDown) carrierDownFor.add(shipmentId);
  const event = paymentEvent({ shipmentId, type: 'payment.settled' });
  assert.equal((await postWebhook(stack, event)).status, 202);
  return { event, shipmentId };
}

describe('a delivery retrying past SETTLE_DELIVERY_STUCK_AFTER', () => {
  test('is listed by settle exceptions, counted by stats and the gauge, and leaves once delivered', async () => {
    const { event, shipmentId } = await applyingEvent({ carrierDown: true });
    const stuck = await waitFor(
      'the carrier delivery listed as delivery_stuck',
      async () =>
        (await exceptions()).exceptions.find(
          (row) => row.event_id === event.id && row.kind === 'delivery_stuck',
        ),
      300_000,
    );
    assert.equal(stuck.target, 'carrier');
    assert.equal(stuck.shipment_id, shipmentId);
    assert.ok(stuck.attempts! >= 1);
    assert.match(stuck.last_error ?? '', /500/);
    assert.match(stuck.next_step, /the target keeps failing/);
    const human = await runSettle(['exceptions'], env);
    assert.match(human.stdout, new RegExp(`delivery_stuck\\s+${event.id}`));
    assert.match(human.stdout, /delivery_stuck: the target keeps failing/);

    // stats and the gauge count the very list `settle exceptions` prints, with the deployment's
    // threshold (2s, written by the gateway), not the CLI's own SETTLE_DELIVERY_STUCK_AFTER (1h).
    const { rows } = await stack.pool.query<{ value: string }>(
      `SELECT value::text FROM deployment_settings WHERE key = 'delivery_stuck_after_ms'`,
    );
    assert.deepEqual(rows, [{ value: '2000' }]);
    const listed = (await exceptions()).exceptions.filter((row) => row.kind === 'delivery_stuck').length;
    assert.equal(listed, 1);
    assert.equal((await openByKind()).delivery_stuck, listed);
    assert.equal(await gauge('delivery_stuck'), listed);

    carrierDownFor.delete(shipmentId);
    await waitFor(
      'the delivery to go through',
      async () => (await carrierRow(event.id))?.status === 'delivered',
    );
    const after = await exceptions();
    assert.equal(
      after.exceptions.some((row) => row.event_id === event.id),
      false,
    );
    assert.equal((await openByKind()).delivery_stuck, 0);
    assert.equal(await gauge('delivery_stuck'), 0);
  });

  test('is closed by resolve, audited, hidden unless --all; a cancelled run is then delivery_abandoned, and replay restarts it without waiting', async () => {
    const { event, shipmentId } = await applyingEvent({ carrierDown: true });
    await waitFor(
      'delivery_stuck',
      async () =>
        (await exceptions('--kind', 'delivery_stuck')).exceptions.some((row) => row.event_id === event.id),
      300_000,
    );

    const resolved = await runSettle(
      ['exceptions', 'resolve', event.id, '--note', 'carrier outage ticket CAR-7', '--by', 'alice', '--json'],
      env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    const record = JSON.parse(resolved.stdout) as {
      resolved: { event_id: string; kind: string; resolved_by: string; note: string }[];
      nothing_open: string[];
    };
    assert.deepEqual(
      record.resolved.map(({ event_id, kind, resolved_by, note }) => ({ event_id, kind, resolved_by, note })),
      [
        {
          event_id: event.id,
          kind: 'delivery_stuck',
          resolved_by: 'alice',
          note: 'carrier outage ticket CAR-7',
        },
      ],
    );
    assert.deepEqual(record.nothing_open, []);
    assert.equal(
      (await exceptions()).exceptions.some((row) => row.event_id === event.id),
      false,
    );
    assert.equal(await gauge('delivery_stuck'), 0);
    assert.equal((await openByKind()).delivery_stuck, 0);
    const all = (await exceptions('--all')).exceptions.find((row) => row.event_id === event.id);
    assert.equal(all?.resolution?.resolved_by, 'alice');
    assert.equal(all?.resolution?.note, 'carrier outage ticket CAR-7');
    const again = await runSettle(['exceptions', 'resolve', event.id, '--note', 'again'], env);
    assert.equal(again.code, 4);
    assert.match(again.stdout, /nothing open/);

    // An operator cancels the run in the UI: its deliveries stay pending, and nothing will send them.
    await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).cancel();
    const abandoned = await waitFor(
      'the pending deliveries listed as delivery_abandoned',
      async () => {
        const rows = (await exceptions()).exceptions.filter(
          (row) => row.event_id === event.id && row.kind === 'delivery_abandoned',
        );
        return rows.length === 2 && rows;
      },
      300_000,
    );
    assert.deepEqual(abandoned.map((row) => row.target).sort(), ['carrier', 'erp']);
    assert.equal(await gauge('delivery_abandoned'), 2);
    assert.equal((await openByKind()).delivery_abandoned, 2);

    // The carrier is still down: replay answers once the reconcile has decided, not after the delivery.
    const replay = await runSettle(['replay', event.id, '--json'], env, 300_000);
    assert.equal(replay.code, 0, replay.stderr);
    const [result] = (JSON.parse(replay.stdout) as { results: ReplayResult[] }).results;
    assert.ok(result?.status === 'replayed');
    assert.deepEqual(
      { before: result.before, after: result.after, changed: result.changed },
      { before: 'applied', after: 'applied', changed: false },
    );
    const carrierDelivery = result.deliveries.find((d) => d.target === 'carrier');
    assert.equal(carrierDelivery?.action_taken, 'started');
    assert.equal(carrierDelivery?.status, 'pending');
    const human = await runSettle(['replay', event.id], env, 300_000);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /no change, the claim already says applied; a run was already running and is sending 2/,
    );
    assert.doesNotMatch(human.stdout, /no-op/);

    // Carrier back: --wait joins the running run and returns once both are delivered.
    carrierDownFor.delete(shipmentId);
    const waited = await runSettle(['replay', event.id, '--wait', '--timeout', '3m', '--json'], env);
    assert.equal(waited.code, 0, waited.stderr);
    const [done] = (JSON.parse(waited.stdout) as { results: ReplayResult[] }).results;
    assert.ok(done?.status === 'replayed');
    assert.deepEqual(
      done.deliveries.map((d) => [d.target, d.status]),
      [
        ['carrier', 'delivered'],
        ['erp', 'delivered'],
      ],
    );
    assert.equal(done.deliveries_settled, true);
    const key = `${event.id}:carrier:release_hold`;
    assert.equal(carrier.effects.filter((k) => k === key).length, 1);
    const { rows } = await stack.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = $1::text',
      [event.id],
    );
    assert.equal(rows[0]!.n, 1);
    assert.equal(
      (await exceptions()).exceptions.some((row) => row.event_id === event.id),
      false,
    );
  });
});

describe('settle replay --wait', () => {
  test('stops on SIGINT while it waits for a delivery, exit 130, and a rerun finishes the job', async () => {
    const { event, shipmentId } = await applyingEvent({ carrierDown: true });
    await waitFor(
      'the carrier delivery to be retrying',
      async () => ((await carrierRow(event.id))?.attempts ?? 0) >= 1,
    );
    const child = spawnSettle(['replay', event.id, '--wait', '--timeout', '10m'], env);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = finished(child);
    await waitFor(
      'the replay to wait for the deliveries',
      async () => /waiting up to 10m for 2 pending/.test(stderr),
      300_000,
    );
    child.kill('SIGINT');
    const interrupted = await exited;
    assert.equal(interrupted.code, 130, interrupted.stderr);
    assert.match(interrupted.stderr, /stopping; what was replayed stands, rerun to finish/);

    carrierDownFor.delete(shipmentId);
    const rerun = await runSettle(['replay', event.id, '--wait', '--timeout', '5m', '--json'], env, 400_000);
    assert.equal(rerun.code, 0, rerun.stderr);
    const [result] = (JSON.parse(rerun.stdout) as { results: ReplayResult[] }).results;
    assert.ok(result?.status === 'replayed');
    assert.deepEqual(
      result.deliveries.map((d) => d.status),
      ['delivered', 'delivered'],
    );
  });
});

describe('settle replay --unmatched', () => {
  test('applies every unmatched event whose shipment now exists, once, with progress and a summary', async () => {
    const events = [0, 1, 2].map(() =>
      paymentEvent({ shipmentId: uniqueId('SHP'), type: 'payment.captured' }),
    );
    for (const event of events) assert.equal((await postWebhook(stack, event)).status, 202);
    for (const event of events) {
      const result = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
      assert.equal(result.outcome, 'unmatched');
    }
    const [first, second, third] = events as [(typeof events)[0], (typeof events)[0], (typeof events)[0]];
    await addShipments(stack.pool, [first.data.shipment_id, second.data.shipment_id]);

    const batch = await runSettle(['replay', '--unmatched', '--json'], env);
    assert.equal(batch.code, 0, batch.stderr);
    const report = JSON.parse(batch.stdout) as {
      results: ReplayResult[];
      summary: { replayed: number; applied_now: number };
    };
    assert.deepEqual(
      report.results.map((r) => [r.event_id, r.status === 'replayed' && r.after]).sort(),
      [
        [first.id, 'applied'],
        [second.id, 'applied'],
      ].sort(),
    );
    assert.equal(report.summary.applied_now, 2);
    assert.match(batch.stderr, /replaying 2 unmatched event/);
    assert.match(batch.stderr, /\[2\/2\]/);

    const rerun = await runSettle(['replay', '--unmatched'], env);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stdout, /^0 replayed/m);
    const { rows } = await stack.pool.query<{ event_id: string; n: number }>(
      `SELECT event_id, count(*)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[]) GROUP BY event_id`,
      [events.map((e) => e.id)],
    );
    assert.deepEqual(
      rows.map((row) => [row.event_id, row.n]).sort(),
      [
        [first.id, 1],
        [second.id, 1],
      ].sort(),
    );
    assert.equal(
      (await exceptions('--kind', 'unmatched')).exceptions.map((row) => row.event_id).includes(third.id),
      true,
    );
  });
});

/** Every key of a JSON document, at any depth, except inside maps whose keys are data (e.g. by_outcome). */
function keysOf(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => keysOf(item, `${path}[]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    DATA_KEYED.has(key) ? [`${path}.${key}`] : [`${path}.${key}`, ...keysOf(inner, `${path}.${key}`)],
  );
}
const DATA_KEYED = new Set(['by_source', 'by_outcome', 'responses', 'webhooks', 'rejected_by_error']);

describe('--json output', () => {
  test('every command names its keys in snake_case', async () => {
    const { event } = await applyingEvent({ carrierDown: false });
    await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
    const commands = [
      ['inspect', event.id],
      ['replay', event.id],
      ['exceptions', '--all'],
      ['exceptions', 'resolve', uniqueId(), '--note', 'n'],
      ['stats'],
      ['purge', '--dry-run'],
      ['shipments', 'add', uniqueId('SHP')],
      ['migrate'],
    ];
    for (const command of commands) {
      const result = await runSettle([...command, '--json'], env);
      const keys = keysOf(JSON.parse(result.stdout));
      assert.ok(keys.length > 0, command.join(' '));
      assert.deepEqual(
        keys.filter((key) => !/^[a-z0-9_]+$/.test(key.split('.').pop()!)),
        [],
        `settle ${command.join(' ')} --json`,
      );
    }
  });
});

describe('two gateways with different SETTLE_DELIVERY_STUCK_AFTER', () => {
  test('the one started last sets the threshold for every surface and warns that it replaced another', async () => {
    const port = await freePort();
    const second = spawnSettle(['gateway'], { ...env, PORT: String(port), SETTLE_LOG_LEVEL: 'info' });
    let output = '';
    second.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    second.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = finished(second);
    try {
      const warning = await waitFor('the second gateway to warn that it replaced the threshold', async () =>
        output
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map(
            (line) =>
              JSON.parse(line) as { level: string; msg: string; previous_ms?: number; now_ms?: number },
          )
          .find((line) => line.msg.includes('SETTLE_DELIVERY_STUCK_AFTER differs')),
      );
      assert.equal(warning.level, 'warn');
      assert.deepEqual([warning.previous_ms, warning.now_ms], [2_000, 3_600_000]);
      const { rows } = await stack.pool.query<{ value: string }>(
        `SELECT value::text FROM deployment_settings WHERE key = 'delivery_stuck_after_ms'`,
      );
      assert.deepEqual(rows, [{ value: '3600000' }]);
    } finally {
      second.kill('SIGTERM');
      await exited;
      // The stack's own threshold again, for the tests after this one.
      await writeDeliveryStuckAfter(stack.pool, 2_000, 'test');
    }
  });
});

describe('settle simulate --out', () => {
  test('writes a provider report that settle import reads, duplicates included', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'settle-report-')), 'report.jsonl');
    const written = await runSettle(
      [
        'simulate',
        '--out',
        file,
        '--count',
        '6',
        '--duplicates',
        '0.5',
        '--seed',
        '7',
        '--add-shipments',
        '--json',
      ],
      env,
    );
    assert.equal(written.code, 0, written.stderr);
    const summary = JSON.parse(written.stdout) as { lines: number; events: number };
    assert.equal(summary.events, 6);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(lines.length, summary.lines);

    const imported = await runSettle(['import', file, '--json'], env);
    assert.equal(imported.code, 0, imported.stderr);
    const counts = (JSON.parse(imported.stdout) as { counts: Record<string, number> }).counts;
    assert.deepEqual(
      { accepted: counts.accepted, duplicate: counts.duplicate },
      { accepted: 6, duplicate: summary.lines - 6 },
    );
  });
});
