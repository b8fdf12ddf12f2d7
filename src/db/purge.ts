import type { Queryable } from './pool';

/**
 * What purgeExpiredClaims removed and kept, and how long its VACUUMs took. The purge activity maps it
 * into its result as workflow history carries it (PurgeResult, src/workflows/contracts.ts).
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

/** Rows per DELETE, so a large backlog never holds long locks against the reconcile path. */
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
 * After the deletes it vacuums the tables it deleted from, so the next days' claims reuse the space:
 * without it, autovacuum (20 % of the table dead, by default) runs long after the next claims have
 * extended the files, and repeated fill-and-purge cycles grow the claim store several times over
 * (docs/performance.md, bench row RT). `db` must not be inside a transaction (VACUUM cannot run in one).
 */
export async function purgeExpiredClaims(
  db: Queryable,
  olderThanMs: number,
  options: {
    dryRun?: boolean;
    /** Called after every committed batch with the running totals (the purge activity heartbeats them). */
    onBatch?: (done: { claims: number; events: number }) => void;
    /** Checked before every batch: once aborted, the purge stops there, every earlier batch committed. */
    signal?: AbortSignal;
  } = {},
): Promise<PurgeReport> {
  const { rows } = await db.query<{ cutoff: Date }>(
    `SELECT now() - ($1::bigint * interval '1 millisecond') AS cutoff`,
    [olderThanMs],
  );
  const cutoff = rows[0]!.cutoff;
  const kept = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM claims
      WHERE claimed_at < $1::timestamptz AND outcome IN ('unmatched', 'needs_review')`,
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

  if (options.dryRun) {
    const counts = await db.query<{
      claims: number;
      events: number;
      conflicts: number;
      providerExceptions: number;
    }>(
      `SELECT
         (SELECT count(*) FROM claims c WHERE c.claimed_at < $1::timestamptz
            AND c.outcome NOT IN ('unmatched', 'needs_review'))::int AS claims,
         (SELECT count(*) FROM events e JOIN claims c USING (event_id) WHERE c.claimed_at < $1::timestamptz
            AND c.outcome NOT IN ('unmatched', 'needs_review'))::int AS events,
         (SELECT count(*) FROM conflicts WHERE last_seen_at < $1::timestamptz)::int AS conflicts,
         (SELECT count(*) FROM provider_exceptions WHERE last_seen_at < $1::timestamptz)::int
           AS "providerExceptions"`,
      [cutoff],
    );
    return { ...result, ...counts.rows[0]! };
  }

  // Each batch deletes by primary key (`= ANY` of an array: an index scan whatever the statistics
  // say). Joined to the CTE instead, the planner hashed both whole tables for every batch of 5,000:
  // quadratic in the backlog (RT, 200,000 claims: 18,300 rows/s; a nested loop after the statistics
  // of an emptied table was far worse).
  for (;;) {
    options.signal?.throwIfAborted();
    const batch = await db.query<{ claims: number; events: number }>(
      `WITH doomed AS (
         SELECT event_id FROM claims
          WHERE claimed_at < $1::timestamptz AND outcome NOT IN ('unmatched', 'needs_review')
          ORDER BY claimed_at
          LIMIT $2::int
          FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM claims WHERE event_id = ANY (ARRAY(SELECT event_id FROM doomed)) RETURNING event_id
       ), gone_events AS (
         DELETE FROM events WHERE event_id = ANY (ARRAY(SELECT event_id FROM gone)) RETURNING event_id
       )
       SELECT (SELECT count(*) FROM gone)::int AS claims, (SELECT count(*) FROM gone_events)::int AS events`,
      [cutoff, BATCH],
    );
    const { claims, events } = batch.rows[0]!;
    result.claims += claims;
    result.events += events;
    options.onBatch?.({ claims: result.claims, events: result.events });
    if (claims < BATCH) break;
  }
  const conflicts = await db.query(`DELETE FROM conflicts WHERE last_seen_at < $1::timestamptz`, [cutoff]);
  result.conflicts = conflicts.rowCount ?? 0;
  const providerExceptions = await db.query(
    `DELETE FROM provider_exceptions WHERE last_seen_at < $1::timestamptz`,
    [cutoff],
  );
  result.providerExceptions = providerExceptions.rowCount ?? 0;
  // Kept as long as the claim it explains.
  await db.query(`DELETE FROM start_outcome_unknown WHERE last_at < $1::timestamptz`, [cutoff]);
  // Runs started around settle's door, refused: kept as long as a claim would be, so a flood of them
  // does not grow the table without end.
  await db.query(`DELETE FROM unadmitted_runs WHERE last_at < $1::timestamptz`, [cutoff]);
  if (result.claims > 0 || result.conflicts > 0) {
    const started = Date.now();
    // Marks the dead rows' heap and index pages free for reuse; returns nothing to the OS (no lock
    // against the reconcile path, unlike VACUUM FULL). Without the right to vacuum (not the tables'
    // owner, no MAINTAIN), PostgreSQL warns and skips: migration 010's autovacuum settings remain.
    await awaitOlderSnapshots(db, options.signal);
    await db.query('VACUUM (ANALYZE) claims, events, conflicts');
    // The index pages that VACUUM emptied are deleted, not yet free: a B-tree page is recyclable only
    // once no transaction can still hold a link to it, and only a later VACUUM puts it in the
    // free-space map. Left to the next day's purge, every fill extended the indexes by its own size
    // again (bench row RT). A second pass
    // finds them recyclable now and has little else to do: nothing is dead in the heaps, their
    // emptied pages are all-visible. "Now" only once every snapshot taken before the pages were
    // deleted has ended (a reconcile transaction, an autovacuum's ANALYZE of a catalog): without the
    // wait, one such snapshot left a cycle's deleted pages to the next day's purge, and that day's
    // fill extended the indexes by its own size (test/purge-space.test.ts, seen in CI).
    await awaitOlderSnapshots(db, options.signal);
    await db.query('VACUUM claims, events');
    result.vacuumMs = Date.now() - started;
  }
  return result;
}

/** How long a purge waits for older snapshots to end before it vacuums anyway. */
const SNAPSHOT_WAIT_MS = 10_000;

/**
 * Waits until no other session of this database holds a snapshot older than now, so that what a
 * VACUUM run next removes or recycles is no longer visible to anyone: it takes a fresh transaction ID
 * and polls `pg_stat_activity` until every other session's `backend_xmin` is younger (or gone).
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
          AND backend_xmin IS NOT NULL AND age(backend_xmin) > age($1::xid)`,
      [mark],
    );
    if (older.rows[0]!.n === 0 || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
