/**
 * Migration 017 on a database an older settle left (migrated through 016, claims and events plain
 * tables with rows in them): the old tables become the legacy partitions without a copy, every row
 * is still found, duplicates are still refused, and the purge still removes old rows at their age
 * (from the legacy partition, row by row) and the legacy partition whole once it is past the cutoff.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { reconcilePayment } from '../src/activities/reconcile-payment';
import { insertAdmittedEvent } from '../src/db/events';
import { migrate, prepareClaimPartitions } from '../src/db/migrate';
import { purgeExpiredClaims } from '../src/db/purge';
import { addShipments } from '../src/db/shipments';
import { withTransaction } from '../src/db/transaction';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentEvent } from '../src/domain/payment-event';
import { payloadSha256 } from '../src/lib/hash';
import { paymentEvent, uniqueId } from '../testkit/harness';
import { useTestDatabase } from '../testkit/hooks';

const DAY_MS = 24 * 3_600_000;

const db = useTestDatabase({ through: '016_foreign_runs.sql' });

type Old = { event: PaymentEvent; days: number; outcome: 'applied' | 'unmatched' | null };

/** A row pair as settle before 017 wrote it: the event `days` ago, its claim (unless null) then. */
async function storeOld(row: Old): Promise<void> {
  await db.pool.query(
    `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, received_at)
     VALUES ($1::text, $2::text, $3::jsonb, $4::text, $5::text, now() - ($6::int * interval '1 day'))`,
    [
      row.event.id,
      row.event.type,
      JSON.stringify(row.event),
      payloadSha256(row.event),
      paymentWorkflowId(row.event.id),
      row.days,
    ],
  );
  if (row.outcome === null) return;
  await db.pool.query(
    `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at)
     VALUES ($1::text, $2::text, $3::text, $4::text, now() - ($5::int * interval '1 day'))`,
    [row.event.id, payloadSha256(row.event), row.outcome, row.event.data.shipment_id, row.days],
  );
}

async function admit(event: PaymentEvent): Promise<boolean> {
  return withTransaction(db.pool, async (tx) => {
    const { inserted } = await insertAdmittedEvent(tx, {
      eventId: event.id,
      type: event.type,
      payload: event,
      payloadSha256: payloadSha256(event),
      workflowId: paymentWorkflowId(event.id),
      source: 'webhook',
    });
    return inserted;
  });
}

async function partitionOf(table: 'claims' | 'events', id: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ partition: string }>(
    `SELECT tableoid::regclass::text AS partition FROM ${table} WHERE event_id = $1::text`,
    [id],
  );
  return rows[0]?.partition;
}

async function relkind(name: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ relkind: string }>(
    `SELECT relkind FROM pg_class WHERE oid = to_regclass($1::text)`,
    [name],
  );
  return rows[0]?.relkind;
}

describe('migration 017 on claims and events with rows', () => {
  const shipmentId = uniqueId('SHP');
  const rows: Old[] = [
    { days: 200, outcome: 'unmatched' },
    { days: 120, outcome: 'applied' },
    { days: 100, outcome: 'applied' },
    { days: 110, outcome: null },
    { days: 30, outcome: 'applied' },
    { days: 0, outcome: 'applied' },
  ].map((row) => ({
    ...row,
    outcome: row.outcome as Old['outcome'],
    event: paymentEvent({ shipmentId, type: 'payment.captured' }),
  }));
  const byDays = (days: number) => rows.find((row) => row.days === days)!;

  test('settle migrate proves the old tables bound before its transaction, then attaches them as they are', async () => {
    await addShipments(db.pool, [shipmentId]);
    for (const row of rows) await storeOld(row);
    const before = await db.pool.query<{ oid: number }>(`SELECT 'claims'::regclass::oid AS oid`);

    // Expand first, as an upgrade runs it: 017 is a contract migration, held back.
    const expand = await migrate(db.pool);
    assert.deepEqual(expand.heldBack, ['017_claim_partitions.sql']);
    assert.equal(await relkind('claims'), 'r');
    assert.equal(await relkind('events'), 'r');
    // This release's purge runs on the plain tables until then: no week to create, row by row.
    const dry = await purgeExpiredClaims(db.pool, 90 * DAY_MS, { dryRun: true });
    assert.deepEqual(
      [dry.claims, dry.events],
      [2, 2],
      'the applied claims 100 and 120 days old, with their events',
    );
    assert.equal((await purgeExpiredClaims(db.pool, 365 * DAY_MS)).claims, 0);
    assert.equal(await relkind('claims_default'), undefined);

    // The step outside the migration's transaction: a validated CHECK, while writes go on.
    await prepareClaimPartitions(db.pool);
    const checks = await db.pool.query<{ table: string; valid: boolean }>(
      `SELECT conrelid::regclass::text AS table, convalidated AS valid FROM pg_constraint
        WHERE conname IN ('claims_before_partitions', 'events_before_partitions') ORDER BY 1`,
    );
    assert.deepEqual(checks.rows, [
      { table: 'claims', valid: true },
      { table: 'events', valid: true },
    ]);
    const written = paymentEvent({ shipmentId: uniqueId('SHP') });
    assert.equal(await admit(written), true, 'a write between the two steps goes in');

    const result = await migrate(db.pool, { contract: true });
    assert.deepEqual(result.applied, ['017_claim_partitions.sql']);
    assert.equal(await relkind('claims'), 'p');
    assert.equal(await relkind('events'), 'p');
    // The old table itself (same relation, not a copy) is the legacy partition.
    const legacy = await db.pool.query<{ oid: number }>(`SELECT 'claims_legacy'::regclass::oid AS oid`);
    assert.equal(legacy.rows[0]!.oid, before.rows[0]!.oid);
    for (const row of rows) {
      assert.equal(await partitionOf('events', row.event.id), 'events_legacy', `event ${row.days} days old`);
      if (row.outcome) assert.equal(await partitionOf('claims', row.event.id), 'claims_legacy');
    }
    assert.equal(await partitionOf('events', written.id), 'events_legacy');
    // Migrated again: nothing to do.
    assert.deepEqual((await migrate(db.pool, { contract: true })).applied, []);
  });

  test('after it, an old event ID is still a duplicate and a new one is claimed once', async () => {
    const old = byDays(30).event;
    assert.equal(await admit(old), false);
    assert.equal(await admit({ ...old, data: { ...old.data, amount: 1 } }), false);
    const again = await reconcilePayment(db.pool, old);
    assert.equal(again.claimExisted, true);
    const ledger = await db.pool.query(`SELECT 1 FROM ledger_entries WHERE event_id = $1::text`, [old.id]);
    assert.equal(ledger.rows.length, 0, 'the old claim decided: nothing applied again');

    const fresh = paymentEvent({ shipmentId, type: 'payment.captured' });
    assert.equal(await admit(fresh), true);
    const results = await Promise.all(Array.from({ length: 5 }, () => reconcilePayment(db.pool, fresh)));
    assert.equal(results.filter((r) => !r.claimExisted).length, 1);
    // Until the legacy bound (two weeks ahead at most), new rows join the legacy partition.
    assert.equal(await partitionOf('claims', fresh.id), 'claims_legacy');
  });

  test('the purge removes the old rows past the retention at their age, and the legacy partition whole once past it', async () => {
    const purged = await purgeExpiredClaims(db.pool, 90 * DAY_MS);
    assert.deepEqual(
      { claims: purged.claims, events: purged.events, kept: purged.keptExceptions },
      { claims: 2, events: 2, kept: 1 },
    );
    for (const days of [120, 100]) {
      assert.equal(await partitionOf('claims', byDays(days).event.id), undefined);
      assert.equal(await partitionOf('events', byDays(days).event.id), undefined);
    }
    for (const days of [200, 110, 30, 0]) {
      assert.equal(await partitionOf('events', byDays(days).event.id), 'events_legacy');
    }

    // A cutoff past the legacy bound (as 90 days after it will be): the legacy partitions go whole;
    // the open exception and the event never claimed move to the DEFAULT partitions.
    await purgeExpiredClaims(db.pool, -30 * DAY_MS);
    assert.equal(await relkind('claims_legacy'), undefined);
    assert.equal(await relkind('events_legacy'), undefined);
    assert.equal(await partitionOf('claims', byDays(200).event.id), 'claims_default');
    assert.equal(await partitionOf('events', byDays(200).event.id), 'events_default');
    assert.equal(await partitionOf('events', byDays(110).event.id), 'events_default');
    assert.equal(await partitionOf('claims', byDays(30).event.id), undefined);
    // And the weeks after it take new rows.
    await purgeExpiredClaims(db.pool, 90 * DAY_MS);
    const next = paymentEvent({ shipmentId: uniqueId('SHP') });
    assert.equal(await admit(next), true);
    assert.match((await partitionOf('events', next.id))!, /^events_w\d{8}$/);
  });
});
