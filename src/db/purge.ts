import type pg from 'pg';
import type { Queryable } from './pool';
import {
  dropPeriod,
  ensurePartitions,
  listExpiredPeriods,
  OPEN_OUTCOMES,
  planPeriod,
  rowPurgedPartitions,
} from './partitions';

/**
 * What purgeExpiredClaims removed and kept, and how long its VACUUMs took. The purge activity maps it
 * into its result as workflow history carries it (PurgeResult, src/domain/workflow-contracts.ts).
 */
export type PurgeReport = {
  /** Claims older than this were eligible. */
  cutoff: string;
  claims: number;
  events: number;
  conflicts: number;
  /**
   * Provider exceptions (raw provider items settle could not apply, which can hold customers' emails
   * and billing details) whose last delivery was before the cutoff: dropped, listed or not.
   */
  providerExceptions: number;
  /** Open exceptions (unmatched, needs_review) past the cutoff, kept until someone resolves them. */
  keptExceptions: number;
  dryRun: boolean;
  /** Milliseconds of the two VACUUMs that make the deleted rows' space reusable (0 when nothing was deleted). */
  vacuumMs: number;
};

/** Rows per DELETE from the DEFAULT partitions, so a large backlog never holds long locks against the reconcile path. */
const BATCH = 5_000;

/**
 * Drops claims whose `claimed_at` is older than `olderThanMs`, with their events rows (and conflict
 * audit rows and provider exceptions last seen before the same cutoff). Nothing younger is touched,
 * and neither are open exceptions of claims: dropping an unmatched claim would lose the event. A
 * provider exception is an item settle can neither apply nor replay, kept only for an operator to act
 * on by hand; its raw payload is personal data, so it goes with the retention like every stored event. Ledger and outbox rows are business records and
 * stay. Once a claim is gone a redelivery of its event is new again, which is why the retention must
 * outlast every provider's replay horizon.
 *
 * Claims and events are partitioned by week (migration 017, src/db/partitions.ts). First the weeks
 * ahead are created, so an insert always finds its week. Then every week wholly past the cutoff is
 * detached and dropped (its open exceptions, the events they need and events never claimed moved to
 * the DEFAULT partitions first): no row deleted, no VACUUM. A week straddling the cutoff waits for
 * the next day's run, so a claim is kept between the retention and the retention plus one week. Last,
 * the DEFAULT partitions (what no week holds: the moved exceptions, rows older than every week) and a
 * migrated database's legacy partition until it expires whole are purged row by row to the exact
 * cutoff, in batches, and vacuumed, as the whole tables were before. On a database upgraded from a
 * release before 017 whose contract step has not run, claims and events are still those whole tables,
 * and that is all the purge does.
 */
export async function purgeExpiredClaims(
  pool: pg.Pool,
  olderThanMs: number,
  options: {
    dryRun?: boolean;
    /** Called after every dropped week and committed batch with the running totals (the purge activity heartbeats them). */
    onBatch?: (done: { claims: number; events: number }) => void;
    /** Checked before every week and batch: once aborted, the purge stops there, every earlier one committed. */
    signal?: AbortSignal;
  } = {},
): Promise<PurgeReport> {
  const { rows } = await pool.query<{ cutoff: Date }>(
    `SELECT now() - ($1::bigint * interval '1 millisecond') AS cutoff`,
    [olderThanMs],
  );
  const cutoff = rows[0]!.cutoff;
  if (!options.dryRun) await ensurePartitions(pool, { signal: options.signal });
  const kept = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM claims
      WHERE claimed_at < $1::timestamptz AND outcome IN ${OPEN_OUTCOMES}`,
    [cutoff],
  );
  const result: PurgeReport = {
    cutoff: cutoff.toISOString(),
    claims: 0,
    events: 0,
    conflicts: 0,
    providerExceptions: 0,
    keptExceptions: kept.rows[0]!.n,
    dryRun: options.dryRun ?? false,
    vacuumMs: 0,
  };

  const periods = await listExpiredPeriods(pool, cutoff);
  if (options.dryRun) {
    for (const period of periods) {
      const plan = await planPeriod(pool, period);
      result.claims += plan.claimRows - plan.openClaims;
      result.events += plan.eventRows - plan.keptEventIds.length;
    }
    const dropped = new Set(periods.map((period) => period.claims));
    for (const { claims } of await rowPurgedPartitions(pool)) {
      if (dropped.has(claims)) continue; // Counted with its period above.
      const counts = await pool.query<{ claims: number; events: number }>(
        `SELECT
           (SELECT count(*) FROM ${claims} c WHERE c.claimed_at < $1::timestamptz
              AND c.outcome NOT IN ${OPEN_OUTCOMES})::int AS claims,
           (SELECT count(*) FROM events e JOIN ${claims} c USING (event_id) WHERE c.claimed_at < $1::timestamptz
              AND c.outcome NOT IN ${OPEN_OUTCOMES})::int AS events`,
        [cutoff],
      );
      result.claims += counts.rows[0]!.claims;
      result.events += counts.rows[0]!.events;
    }
    const counts = await pool.query<{ conflicts: number; providerExceptions: number }>(
      `SELECT
         (SELECT count(*) FROM conflicts WHERE last_seen_at < $1::timestamptz)::int AS conflicts,
         (SELECT count(*) FROM provider_exceptions WHERE last_seen_at < $1::timestamptz)::int
           AS "providerExceptions"`,
      [cutoff],
    );
    const row = counts.rows[0]!;
    return {
      ...result,
      conflicts: row.conflicts,
      providerExceptions: row.providerExceptions,
    };
  }

  for (const period of periods) {
    options.signal?.throwIfAborted();
    const dropped = await dropPeriod(pool, period, await planPeriod(pool, period), options.signal);
    result.claims += dropped.claims;
    result.events += dropped.events;
    options.onBatch?.({ claims: result.claims, events: result.events });
  }

  // Each batch deletes by primary key (`= ANY` of an array: an index scan whatever the statistics
  // say). Joined to the CTE instead, the planner hashed both whole tables for every batch of 5,000:
  // quadratic in the backlog (RT, 200,000 claims: 18,300 rows/s; a nested loop after the statistics
  // of an emptied table was far worse). The events go wherever they are (a claim's event may sit in
  // a week partition still live).
  const rowPurged = await rowPurgedPartitions(pool);
  let deletedRows = 0;
  for (const { claims: table } of rowPurged) {
    for (;;) {
      options.signal?.throwIfAborted();
      const batch = await pool.query<{ claims: number; events: number }>(
        `WITH doomed AS (
           SELECT event_id FROM ${table}
            WHERE claimed_at < $1::timestamptz AND outcome NOT IN ${OPEN_OUTCOMES}
            ORDER BY claimed_at
            LIMIT $2::int
            FOR UPDATE SKIP LOCKED
         ), gone AS (
           DELETE FROM ${table} WHERE event_id = ANY (ARRAY(SELECT event_id FROM doomed)) RETURNING event_id
         ), gone_events AS (
           DELETE FROM events WHERE event_id = ANY (ARRAY(SELECT event_id FROM gone)) RETURNING event_id
         )
         SELECT (SELECT count(*) FROM gone)::int AS claims, (SELECT count(*) FROM gone_events)::int AS events`,
        [cutoff, BATCH],
      );
      const { claims, events } = batch.rows[0]!;
      deletedRows += claims;
      result.claims += claims;
      result.events += events;
      options.onBatch?.({ claims: result.claims, events: result.events });
      if (claims < BATCH) break;
    }
  }
  const conflicts = await pool.query(`DELETE FROM conflicts WHERE last_seen_at < $1::timestamptz`, [cutoff]);
  result.conflicts = conflicts.rowCount ?? 0;
  const providerExceptions = await pool.query(
    `DELETE FROM provider_exceptions WHERE last_seen_at < $1::timestamptz`,
    [cutoff],
  );
  result.providerExceptions = providerExceptions.rowCount ?? 0;
  // Kept as long as the claim it explains.
  await pool.query(`DELETE FROM start_outcome_unknown WHERE last_at < $1::timestamptz`, [cutoff]);
  // Runs started around settle's door, refused: kept as long as a claim would be, so a flood of them
  // does not grow the table without end.
  await pool.query(`DELETE FROM unadmitted_runs WHERE last_at < $1::timestamptz`, [cutoff]);
  // Transmission IDs taken once (a provider's weak-binding signature): a signature older than its window is refused anyway.
  await pool.query(`DELETE FROM provider_transmissions WHERE first_seen_at < $1::timestamptz`, [cutoff]);
  // The record of settle's own runs goes with the claims (one row per start): in batches, by index.
  for (;;) {
    options.signal?.throwIfAborted();
    const runs = await pool.query(
      `DELETE FROM settle_runs WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM settle_runs WHERE started_at < $1::timestamptz LIMIT $2::int))`,
      [cutoff, BATCH],
    );
    if ((runs.rowCount ?? 0) < BATCH) break;
  }
  if (deletedRows > 0 || result.conflicts > 0) {
    const tables = rowPurged.flatMap((pair) => [pair.claims, pair.events]).join(', ');
    const started = Date.now();
    // Marks the dead rows' heap and index pages free for reuse and returns nothing to the OS: no lock
    // against the reconcile path. Not VACUUM FULL, and TRUNCATE false: cutting the emptied pages off
    // a heap's end takes an ACCESS EXCLUSIVE lock on the partition, which every claim lookup (it
    // reads all partitions) waits behind while VACUUM holds it, and which a hot standby replays
    // against its queries. The next days' rows would only grow the heap back. Truncation is also a
    // coin toss: VACUUM skips it when the lock is not free within 5 s. Then the store's size after a
    // purge depended on whether a reader was in the way (test/purge-space.test.ts, seen in CI).
    // Without the right to vacuum (not the tables' owner, no MAINTAIN), PostgreSQL warns and skips:
    // the DEFAULT partitions' autovacuum settings (migration 017) remain. The week partitions are
    // never deleted from: nothing to vacuum there.
    await awaitOlderSnapshots(pool, options.signal);
    await pool.query(`VACUUM (ANALYZE, TRUNCATE false) ${tables}, conflicts`);
    // The index pages that VACUUM emptied are deleted, not yet free: a B-tree page is recyclable only
    // once no transaction can still hold a link to it, and only a later VACUUM puts it in the
    // free-space map. Left to the next day's purge, every fill extended the indexes by its own size
    // again (bench row RT). A second pass
    // finds them recyclable now and has little else to do: nothing is dead in the heaps, their
    // emptied pages are all-visible. "Now" only once every snapshot taken before the pages were
    // deleted has ended (a reconcile transaction, an autovacuum's ANALYZE of a catalog): without the
    // wait, one such snapshot left a cycle's deleted pages to the next day's purge, and that day's
    // fill extended the indexes by its own size (test/purge-space.test.ts, seen in CI).
    await awaitOlderSnapshots(pool, options.signal);
    await pool.query(`VACUUM (TRUNCATE false) ${tables}`);
    result.vacuumMs = Date.now() - started;
  }
  return result;
}

/** How long a purge waits for older snapshots to end before it vacuums anyway. */
const SNAPSHOT_WAIT_MS = 10_000;

/**
 * Waits until no other session of this database holds a snapshot older than now, so that what a
 * VACUUM run next removes or recycles is no longer visible to anyone: it takes a fresh transaction ID
 * (the mark) and polls `pg_stat_activity` until every other session's `backend_xmin` is younger than
 * the mark (or gone). Younger, not merely as old: a snapshot taken while the mark was being assigned
 * has the mark itself as its xmin, and the mark can be the very ID the index pages just deleted
 * carry as the point from which they are recyclable. A page is stamped with the next ID to be
 * assigned, and an empty table's VACUUM (ANALYZE) assigns none, so the mark is often that next ID.
 * Such a snapshot kept every page the first pass deleted from the second, many purges on a quiet
 * database (test/purge-space.test.ts).
 * Bounded: a transaction left open for longer (or a session this role may not see, such as another
 * role's or an autovacuum worker's without pg_read_all_stats) costs only reuse, never correctness,
 * so after SNAPSHOT_WAIT_MS the VACUUM runs regardless.
 */
async function awaitOlderSnapshots(db: Queryable, signal?: AbortSignal): Promise<void> {
  // Its own transaction (autocommit): the ID is assigned and committed at once. Only its low 32 bits
  // compare with backend_xmin (an xid), by age.
  const { rows } = await db.query<{ mark: string }>(
    `SELECT (pg_current_xact_id()::text::numeric % 4294967296)::text AS mark`,
  );
  const mark = rows[0]!.mark;
  const deadline = Date.now() + SNAPSHOT_WAIT_MS;
  for (;;) {
    signal?.throwIfAborted();
    const older = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age($1::xid)`,
      [mark],
    );
    if (older.rows[0]!.n === 0 || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
