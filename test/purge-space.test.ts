/**
 * The claim store after repeated fill-and-purge cycles: the purge must leave the space it frees
 * reusable, so a deployment's claims and events tables stay the size of one retention period
 * instead of growing with every purge (bench row RT measures the same at 10 million claims). And the
 * purge activity at volume: a day's deletes outlast any fixed attempt length, so it reports its
 * progress in heartbeats and a cancelled attempt leaves committed batches behind for the next one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type pg from 'pg';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createPurgeActivities } from '../src/activities/purge';
import { claimStoreSize } from '../src/db/partitions';
import { purgeExpiredClaims } from '../src/db/purge';
import { freePort } from '../testkit/free-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/stack/embedded-postgres';
import type { PurgeResult } from '../src/domain/workflow-contracts';

const RETENTION_MS = 90 * 24 * 3_600_000;
const CLAIMS_PER_CYCLE = 20_000;

// A PostgreSQL server of this file's own, not the suite's shared one: what a VACUUM may remove or
// recycle is bounded by the oldest snapshot of the database, and a snapshot's xmin is held back by
// any transaction running anywhere in the server. Another test file's long transaction in its own
// database would keep this file's reader (below) from ever seeing past the purge's deletes.
let scratch: string;
let server: EmbeddedDatabase;
let db: { pool: pg.Pool };
before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'settle-purge-space-'));
  server = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
  await server.createDatabase('settle');
  db = { pool: createPool(server.urlFor('settle')) };
  await migrate(db.pool);
});
after(async () => {
  await db?.pool.end();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** `count` applied claims with their events, 100 days old: past the 90-day retention. */
async function fillPastRetention(pool: pg.Pool, cycle: number, count: number): Promise<void> {
  const prefix = `old-${cycle}`;
  await pool.query(
    `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, received_at)
     SELECT $1 || '-' || g, 'payment.settled',
            jsonb_build_object('id', $1 || '-' || g, 'type', 'payment.settled', 'created_at', '2026-08-10T02:14:00Z',
              'data', jsonb_build_object('shipment_id', 'SHP-' || g, 'amount', 12500, 'currency', 'EUR')),
            md5($1 || g) || md5(g::text), 'payment:' || $1 || '-' || g, now() - interval '100 days'
       FROM generate_series(1, $2::int) g`,
    [prefix, count],
  );
  await pool.query(
    `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at, updated_at)
     SELECT $1 || '-' || g, md5($1 || g) || md5(g::text), 'applied', 'SHP-' || g,
            now() - interval '100 days', now() - interval '100 days'
       FROM generate_series(1, $2::int) g`,
    [prefix, count],
  );
}

/** claims and events (every partition) with their indexes and TOAST, in bytes. */
const claimStoreBytes = async (pool: pg.Pool) => (await claimStoreSize(pool)).bytes;

/** claims' and events' indexes, in bytes. */
const indexBytes = async (pool: pg.Pool) => (await claimStoreSize(pool)).indexBytes;

test(
  'after five fill-and-purge cycles the claim store is no larger than after two and its indexes no larger than after one: the purge frees its space for reuse',
  { timeout: 300_000 },
  async () => {
    // The purge's own VACUUMs are what this checks. An autovacuum that starts mid-cycle (migration
    // 010 sets 1 % thresholds) holds a snapshot through its ANALYZE, and while it does, no index
    // page the purge's VACUUM deleted can be recycled yet: that cycle's fill would extend the
    // indexes whatever the purge did (docs/capacity.md, "Retention by DELETE").
    // Rows older than every week partition are in the DEFAULT partitions (migration 017), the only
    // ones the purge deletes from and vacuums.
    await db.pool.query(`ALTER TABLE claims_default SET (autovacuum_enabled = false)`);
    await db.pool.query(`ALTER TABLE events_default SET (autovacuum_enabled = false)`);
    const young = 'young-claim';
    await db.pool.query(
      `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id)
     VALUES ($1, 'payment.settled', '{}'::jsonb, 'h', 'payment:' || $1)`,
      [young],
    );
    await db.pool.query(
      `INSERT INTO claims (event_id, payload_sha256, outcome) VALUES ($1, 'h', 'applied')`,
      [young],
    );

    // And all along, a reader as the reconcile path is one: short transactions, each holding its
    // snapshot, so that one is open whenever the purge's VACUUMs start (a snapshot older than a
    // deleted page keeps it from reuse; the purge waits for them to end).
    const reader = await db.pool.connect();
    let reading = true;
    const readerDone = (async () => {
      while (reading) {
        await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await reader.query('SELECT outcome FROM claims WHERE event_id = $1', [young]);
        await reader.query('SELECT pg_sleep(0.02)');
        await reader.query('COMMIT');
      }
    })();

    const sizes: number[] = [];
    const indexes: number[] = [];
    try {
      for (let cycle = 1; cycle <= 5; cycle += 1) {
        await fillPastRetention(db.pool, cycle, CLAIMS_PER_CYCLE);
        const purged = await purgeExpiredClaims(db.pool, RETENTION_MS);
        assert.deepEqual(
          { claims: purged.claims, events: purged.events },
          { claims: CLAIMS_PER_CYCLE, events: CLAIMS_PER_CYCLE },
        );
        sizes.push(await claimStoreBytes(db.pool));
        indexes.push(await indexBytes(db.pool));
      }
    } finally {
      reading = false;
      await readerDone;
      reader.release();
    }
    // A fill reuses the heap and the index pages the previous purge freed. Before the purge vacuumed,
    // every cycle added a fill's worth (5 × the first, 2.5 × the second); with one VACUUM the indexes
    // doubled at the second cycle (its deleted pages were free only from the next VACUUM on).
    const mbs = (list: number[]) => list.map((bytes) => (bytes / 1024 ** 2).toFixed(1)).join(', ');
    assert.ok(sizes[4]! <= sizes[1]! * 1.1, `claim store after each cycle (MB): ${mbs(sizes)}`);
    assert.ok(
      indexes[4]! <= indexes[0]! * 1.2,
      `claims' and events' indexes after each cycle (MB): ${mbs(indexes)}`,
    );
    // The young claim and its event outlived every purge.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM claims WHERE event_id = $1) + (SELECT count(*) FROM events WHERE event_id = $1) AS n`,
      [young],
    );
    assert.equal(Number(rows[0]!.n), 2);
  },
);

/** Expired claims still in the store. */
async function expiredLeft(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM claims WHERE claimed_at < now() - interval '90 days'`,
  );
  return rows[0]!.n;
}

test('the purge activity heartbeats its progress after every batch; cancelled, it stops before the next and a retry purges the rest', async () => {
  const activities = createPurgeActivities({ pool: db.pool, claimRetentionMs: RETENTION_MS });
  // Three batches of 5,000 and a last short one.
  const total = 16_000;
  await fillPastRetention(db.pool, 10, total);

  // Cancelled as its first heartbeat arrives: the first batch is committed, the rest is not started.
  const cancelled = new MockActivityEnvironment();
  const beats: { claims: number; events: number }[] = [];
  cancelled.on('heartbeat', (details: { claims: number; events: number }) => {
    if (details.claims === 0) return; // The clock's heartbeat before the first batch: no progress yet.
    beats.push(details);
    cancelled.cancel();
  });
  await assert.rejects(cancelled.run(activities.purgeClaimsPastRetention), (error: unknown) => {
    assert.ok(error instanceof CancelledFailure, String(error));
    return true;
  });
  assert.deepEqual(beats, [{ claims: 5_000, events: 5_000 }]);
  assert.equal(await expiredLeft(db.pool), total - 5_000);

  // The retry: one heartbeat per batch, running totals, and nothing expired left.
  const retry = new MockActivityEnvironment();
  const progress: number[] = [];
  retry.on('heartbeat', (details: { claims: number }) => {
    // The clock's heartbeats repeat the last progress; one entry per batch.
    if (details.claims > (progress.at(-1) ?? 0)) progress.push(details.claims);
  });
  const result: PurgeResult = await retry.run(activities.purgeClaimsPastRetention);
  assert.equal(result.claims, total - 5_000);
  assert.deepEqual(progress, [5_000, 10_000, 11_000]);
  assert.equal(await expiredLeft(db.pool), 0);
});
