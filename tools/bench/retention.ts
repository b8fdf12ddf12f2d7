import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { claimStoreSize, ensurePartitions } from '../../src/db/partitions';
import { purgeExpiredClaims, type PurgeReport } from '../../src/db/purge';
import { round } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import { benchFixedLoad, loadEvents, preparePathEvents } from './full-path';
import { bestRate, type RowRun } from './context';

/** settle's default SETTLE_CLAIM_RETENTION. */
const RETENTION_MS = 90 * 24 * 3_600_000;
const CYCLES = 5;

/**
 * Fills the claim store with `count` claims (and their events rows) past the retention, in SQL
 * (generate_series), as 100-day-old applied events: what `settle purge` finds after a quiet quarter.
 * Rows that old have been vacuumed (autovacuum's insert threshold, and its anti-wraparound runs) and
 * written out by checkpoints long ago: so are these, before the purge. Rows inserted a moment ago
 * are not, and the first scan of them would rewrite every page of the week (hint bits) while an
 * autovacuum reads it beside: writes that no week past the retention ever costs.
 */
export async function fillPastRetention(pool: pg.Pool, count: number): Promise<void> {
  const prefix = `ret-${randomBytes(3).toString('hex')}`;
  // Their week's partition (migration 017), as the store had it 100 days ago: the purge drops it
  // whole. Without it they would land in the DEFAULT partitions and be deleted row by row.
  await ensurePartitions(pool, { from: new Date(Date.now() - 100 * 24 * 3_600_000), weeks: 0 });
  // The two tables share no key constraint, so they are filled on two connections at once.
  await Promise.all([
    pool.query(
      `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, source, received_at)
       SELECT $1 || '-' || g, 'payment.settled',
              jsonb_build_object('id', $1 || '-' || g, 'type', 'payment.settled',
                'created_at', '2026-08-10T02:14:00Z',
                'data', jsonb_build_object('shipment_id', 'SHP-RET-' || g, 'payment_id', 'pi_ret_' || g,
                                           'amount', 12500, 'currency', 'EUR')),
              md5(g::text) || md5($1 || g), 'payment:' || $1 || '-' || g, 'webhook', now() - interval '100 days'
         FROM generate_series(1, $2::int) g`,
      [prefix, count],
    ),
    pool.query(
      `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at, updated_at)
       SELECT $1 || '-' || g, md5(g::text) || md5($1 || g), 'applied', 'SHP-RET-' || g,
              now() - interval '100 days', now() - interval '100 days'
         FROM generate_series(1, $2::int) g`,
      [prefix, count],
    ),
  ]);
  await pool.query(`VACUUM (ANALYZE) claims, events`);
  await pool.query(`CHECKPOINT`);
}

/** claims and events, every partition with its indexes and TOAST. */
const claimStoreBytes = async (stack: ProofStack) => (await claimStoreSize(stack.pool)).bytes;

const mb = (bytes: number) => round(bytes / 1024 ** 2, 1);

/**
 * One cycle's figures, read right after its purge: each table's heap (with TOAST) and its indexes,
 * the dead rows PostgreSQL still counts (what a missing vacuum leaves), how often autovacuum has run
 * on them so far, and the purge's rows (claims + events) per second, its VACUUM included.
 */
async function cycleFigures(pool: pg.Pool, cycle: number, purged: PurgeReport & { ms: number }) {
  const { rows } = await pool.query<{
    relname: string;
    heap: string;
    indexes: string;
    dead: string;
    autovacuums: string;
  }>(
    `SELECT t.parent AS relname, sum(pg_total_relation_size(s.relid) - pg_indexes_size(s.relid))::text AS heap,
            sum(pg_indexes_size(s.relid))::text AS indexes, sum(s.n_dead_tup)::text AS dead,
            sum(s.autovacuum_count)::text AS autovacuums
       FROM (SELECT 'claims' AS parent, relid FROM pg_partition_tree('claims') WHERE isleaf
             UNION ALL SELECT 'events', relid FROM pg_partition_tree('events') WHERE isleaf) t
       JOIN pg_stat_user_tables s ON s.relid = t.relid
      GROUP BY t.parent`,
  );
  const figures: Record<string, number> = {
    [`c${cycle}PurgeRowsPerSecond`]: round(
      ((purged.claims + purged.events) * 1000) / Math.max(purged.ms, 1),
      0,
    ),
    [`c${cycle}VacuumMs`]: purged.vacuumMs,
  };
  for (const row of rows) {
    const name = row.relname === 'claims' ? 'Claims' : 'Events';
    figures[`c${cycle}${name}TableMb`] = mb(Number(row.heap));
    figures[`c${cycle}${name}IndexesMb`] = mb(Number(row.indexes));
    figures[`c${cycle}${name}DeadRows`] = Number(row.dead);
    figures[`c${cycle}${name}Autovacuums`] = Number(row.autovacuums);
  }
  return figures;
}

/** `settle purge` as the Schedule runs it, timed. */
async function timedPurge(pool: pg.Pool): Promise<PurgeReport & { ms: number }> {
  const started = Date.now();
  const result = await purgeExpiredClaims(pool, RETENTION_MS);
  return { ...result, ms: Date.now() - started };
}

/**
 * RT: retention at volume. Live webhooks at `ratePerSecond` for `durationMs`, idle; then `count`
 * past-retention claims generated in SQL and purged (src/db/purge.ts, what `settle purge` runs) while
 * the same live load flows: the live delivered p99 of both windows and the purge's rows per second.
 * Then four more fill-and-purge cycles without live load. Per cycle (`c1…c5`): the claim store's size
 * filled (its peak: the disk it needs), the claims and events tables' and indexes' sizes, dead rows
 * and autovacuum runs after the purge, and the purge's rows per second and VACUUM time.
 */
export async function benchRetention(
  stack: ProofStack,
  count: number,
  ratePerSecond: number,
  durationMs: number,
): Promise<Record<string, number>> {
  const idleEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const liveEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const idle = await benchFixedLoad(stack, ratePerSecond, durationMs, idleEvents);
  const before = await claimStoreBytes(stack);
  await fillPastRetention(stack.pool, count);
  const filled = await claimStoreBytes(stack);

  const purging = timedPurge(stack.pool);
  const live = await benchFixedLoad(stack, ratePerSecond, durationMs, liveEvents);
  const purged = await purging;
  const afterFirst = await claimStoreBytes(stack);
  let cycles = { c1FilledMb: mb(filled), ...(await cycleFigures(stack.pool, 1, purged)) };

  for (let cycle = 2; cycle <= CYCLES; cycle += 1) {
    await fillPastRetention(stack.pool, count);
    const peak = await claimStoreBytes(stack);
    cycles = {
      ...cycles,
      [`c${cycle}FilledMb`]: mb(peak),
      ...(await cycleFigures(stack.pool, cycle, await timedPurge(stack.pool))),
    };
  }
  const afterLast = await claimStoreBytes(stack);
  return {
    pastRetentionClaims: count,
    offeredPerSecond: ratePerSecond,
    sent: idle.sent + live.sent,
    errors: idle.errors + live.errors,
    idleDeliveredP99Ms: idle.deliveredP99Ms,
    purgingDeliveredP99Ms: live.deliveredP99Ms,
    liveWindowMs: durationMs,
    purgedClaims: purged.claims,
    purgeMs: purged.ms,
    purgeRowsPerSecond: round(((purged.claims + purged.events) * 1000) / Math.max(purged.ms, 1), 0),
    claimStoreMbBefore: mb(before),
    claimStoreMbFilled: mb(filled),
    claimStoreMbAfterFirstCycle: mb(afterFirst),
    claimStoreMbAfterFiveCycles: mb(afterLast),
    ...cycles,
  };
}

/**
 * RT, once: live webhooks at a quarter of P's best rate (4/s without P) idle, then while the purge
 * of past-retention claims generated in SQL runs; then four more fill-and-purge cycles. The full
 * row's purge takes minutes, so its live windows are three times the others', all inside the purge.
 */
export const runRetention: RowRun = async (ctx) => {
  const pMax = bestRate(ctx, 'P@');
  const rate = pMax > 0 ? round(pMax / 4, 1) : 4;
  const liveMs = (ctx.short ? 1 : 3) * ctx.size.loadSeconds * 1000;
  const claims = ctx.size.retentionClaims;
  await ctx.measure('RT', `purge of ${claims} past-retention claims under live load`, {
    run: () => benchRetention(ctx.stack, claims, rate, liveMs),
    events: (figures) => figures.sent!,
    reps: 1,
  });
};
