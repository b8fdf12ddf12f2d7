import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ExceptionRow } from '../src/db/exceptions';
import { replayEvent } from '../src/app/replay';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { EventInspection } from '../src/app/inspect';
import { purgeScheduleId } from '../src/temporal/purge-schedule';
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

let stack: TestStack;
let downstream: Receiver;
before(async () => {
  downstream = await startReceiver();
  stack = await startTestStack({ config: { carrierUrl: downstream.url, erpUrl: downstream.url } });
});
after(async () => {
  await stack.client.schedule
    .getHandle(purgeScheduleId(stack.taskQueue))
    .delete()
    .catch(() => {});
  await stack.close();
  await downstream.close();
});

async function settled(eventId: string) {
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
}

async function exceptions(): Promise<ExceptionRow[]> {
  const result = await runSettle(['exceptions', '--json'], stackEnv(stack));
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { exceptions: ExceptionRow[] }).exceptions;
}

describe('settle exceptions and replay', () => {
  test('lists an unmatched and a conflicting event; replay fixes the unmatched one, once', async () => {
    const missingShipment = uniqueId('SHP');
    const unmatched = paymentEvent({ shipmentId: missingShipment, type: 'payment.captured' });
    assert.equal((await postWebhook(stack, unmatched)).status, 202);
    assert.equal((await settled(unmatched.id)).outcome, 'unmatched');

    const shipmentId = uniqueId('SHP');
    await addShipments(stack.pool, [shipmentId]);
    const original = paymentEvent({ shipmentId, amount: 12500 });
    assert.equal((await postWebhook(stack, original)).status, 202);
    await settled(original.id);
    const reused = { ...original, data: { ...original.data, amount: 99 } };
    assert.equal((await postWebhook(stack, reused)).status, 409);
    assert.equal((await postWebhook(stack, reused)).status, 409);

    const listed = await exceptions();
    const unmatchedRow = listed.find((row) => row.event_id === unmatched.id);
    const conflictRow = listed.find((row) => row.event_id === original.id && row.kind === 'conflict');
    assert.equal(unmatchedRow?.kind, 'unmatched');
    assert.equal(unmatchedRow?.shipment_id, missingShipment);
    assert.equal(conflictRow?.kind, 'conflict');
    assert.match(conflictRow!.detail, /^2 delivery/);

    const human = await runSettle(['exceptions'], stackEnv(stack));
    assert.match(human.stdout, new RegExp(`unmatched\\s+${unmatched.id}`));
    assert.match(human.stdout, /settle replay/);

    // The 409s changed nothing about the original.
    const inspected = await runSettle(['inspect', original.id, '--json'], stackEnv(stack));
    const view = JSON.parse(inspected.stdout) as EventInspection;
    assert.equal(view.outcome, 'applied');
    assert.deepEqual(
      view.ledger.map((entry) => entry.amount),
      [12500],
    );

    // The replay itself, through the CLI and repeated, is cli.test.ts's; here: what exceptions says after.
    await addShipments(stack.pool, [missingShipment]);
    const replay = await replayEvent(
      { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue },
      unmatched.id,
    );
    assert.deepEqual(
      replay.status === 'replayed' && { before: replay.before, after: replay.after, changed: replay.changed },
      { before: 'unmatched', after: 'applied', changed: true },
    );

    // No longer unmatched. (This stack has no carrier or ERP URL: its deliveries are exceptions of
    // their own, which operator-console.test.ts covers.)
    const remaining = await exceptions();
    assert.equal(
      remaining.some((row) => row.event_id === unmatched.id && row.kind === 'unmatched'),
      false,
    );
    assert.ok(remaining.some((row) => row.event_id === original.id && row.kind === 'conflict'));
    const { rows } = await stack.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = $1::text`,
      [unmatched.id],
    );
    assert.equal(rows[0]!.n, 1);
  });
});

describe('retention', () => {
  /** Accepts and reconciles one event, then ages its claim (and receipt) by `days`. */
  async function claimAged(days: number, options: { matched?: boolean } = {}): Promise<string> {
    const shipmentId = uniqueId('SHP');
    if (options.matched !== false) await addShipments(stack.pool, [shipmentId]);
    const event = paymentEvent({ shipmentId });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await settled(event.id);
    await stack.pool.query(
      `UPDATE claims SET claimed_at = now() - ($2::int * interval '1 day'), updated_at = now() - ($2::int * interval '1 day')
        WHERE event_id = $1::text`,
      [event.id, days],
    );
    await stack.pool.query(
      `UPDATE events SET received_at = now() - ($2::int * interval '1 day') WHERE event_id = $1::text`,
      [event.id, days],
    );
    return event.id;
  }

  async function present(table: 'claims' | 'events', eventId: string): Promise<boolean> {
    const { rows } = await stack.pool.query(`SELECT 1 FROM ${table} WHERE event_id = $1::text`, [eventId]);
    return rows.length === 1;
  }

  test('purge removes only claims past retention, with their events, and keeps open exceptions', async () => {
    const old = [await claimAged(120), await claimAged(91)];
    const young = [await claimAged(89), await claimAged(0)];
    const parked = await claimAged(200, { matched: false });

    const dry = await runSettle(['purge', '--older-than', '90d', '--dry-run', '--json'], stackEnv(stack));
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(JSON.parse(dry.stdout).claims, 2);
    for (const id of old) assert.equal(await present('claims', id), true);

    const purge = await runSettle(['purge', '--json'], stackEnv(stack, { SETTLE_CLAIM_RETENTION: '90d' }));
    assert.equal(purge.code, 0, purge.stderr);
    const result = JSON.parse(purge.stdout) as { claims: number; events: number; kept_exceptions: number };
    assert.deepEqual(
      { claims: result.claims, events: result.events, kept: result.kept_exceptions },
      { claims: 2, events: 2, kept: 1 },
    );
    for (const id of old) {
      assert.equal(await present('claims', id), false);
      assert.equal(await present('events', id), false);
    }
    for (const id of [...young, parked]) {
      assert.equal(await present('claims', id), true);
      assert.equal(await present('events', id), true);
    }
    // The ledger is a business record: purging claims never touches it.
    const { rows } = await stack.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[])`,
      [old],
    );
    assert.equal(rows[0]!.n, 2);
  });

  test('purge refuses a cutoff not longer than the namespace retention, unless --force', async () => {
    // Older than a week and a day: its week (or the DEFAULT partition) is wholly past the 1-day
    // cutoff, whatever the weekday (a week straddling the cutoff is kept whole, docs/capacity.md).
    const aged = await claimAged(9);
    const refused = await runSettle(['purge', '--older-than', '1m'], stackEnv(stack));
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /refusing to purge claims older than 1m: .*namespace default's retention \(1d\)/,
    );
    assert.match(refused.stderr, /--force/);
    assert.equal(await present('claims', aged), true);

    const forced = await runSettle(['purge', '--older-than', '1d', '--force', '--json'], stackEnv(stack));
    assert.equal(forced.code, 0, forced.stderr);
    assert.ok((JSON.parse(forced.stdout) as { claims: number }).claims >= 1);
    assert.equal(await present('claims', aged), false);
  });

  test('the purge Schedule exists once after two worker starts, warns on a short retention, and purges', async () => {
    const startWorker = async (extra: NodeJS.ProcessEnv) => {
      const child = spawnSettle(['worker'], stackEnv(stack, { SETTLE_METRICS_PORT: '0', ...extra }));
      const done = finished(child);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await waitFor('the worker to run', async () => out.includes('worker running'), 300_000);
      child.kill('SIGTERM');
      const run = await done;
      assert.equal(run.code, 0, run.stderr);
      return run.stdout;
    };
    const first = await startWorker({});
    const second = await startWorker({ SETTLE_CLAIM_RETENTION: '1h' });
    const created = (out: string) =>
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg: string; created?: boolean })
        .find((line) => line.msg === 'claim purge schedule ready')?.created;
    assert.equal(created(first), true);
    assert.equal(created(second), false);
    assert.match(second, /SETTLE_CLAIM_RETENTION is not longer than the Temporal namespace retention/);
    assert.doesNotMatch(first, /SETTLE_CLAIM_RETENTION is not longer/);

    const scheduleId = purgeScheduleId(stack.taskQueue);
    const description = await stack.client.schedule.getHandle(scheduleId).describe();
    assert.equal(description.action.type, 'startWorkflow');
    assert.equal(description.action.workflowType, 'purgeClaimsWorkflow');
    assert.equal(description.action.taskQueue, stack.taskQueue);
    const listed = await waitFor('the schedule to be listed', async () => {
      const ids: string[] = [];
      for await (const schedule of stack.client.schedule.list()) ids.push(schedule.scheduleId);
      const mine = ids.filter((id) => id === scheduleId);
      return mine.length > 0 && mine;
    });
    assert.equal(listed.length, 1);

    // Triggered now instead of at 03:17: the scheduled workflow purges with the worker's retention.
    const expired = await claimAged(95);
    await stack.client.schedule.getHandle(scheduleId).trigger();
    await waitFor('the scheduled purge', async () => !(await present('claims', expired)), 300_000);
    assert.equal(await present('events', expired), false);
  });
});
