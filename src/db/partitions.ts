import type pg from 'pg';
import type { Queryable } from './pool';
import { withTransaction } from './transaction';

/**
 * The claim store's time partitions (migration 017): claims by claimed_at and events by received_at,
 * one partition per UTC week (`claims_w20261207`, its Monday), the legacy partition a migrated
 * database's old table became (everything before its bound), and a DEFAULT partition each.
 *
 * 017 is a contract migration (src/db/migrate.ts): on a database upgraded from a release before it,
 * claims and events stay the plain tables of 001–016 until `settle migrate --contract`, and this code
 * works on both (no weeks to create or drop; the purge deletes from the plain tables row by row).
 */

/** False while claims and events are still the plain tables of 001–016 (017 held back). */
export async function claimStorePartitioned(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ partitioned: boolean }>(
    `SELECT coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('claims')), false) AS partitioned`,
  );
  return rows[0]!.partitioned;
}

/** Weeks created ahead of the current one, by the migrator and by every purge run. */
export const WEEKS_AHEAD = 4;

/** The outcomes of an open exception: kept past the retention until someone resolves them. */
export const OPEN_OUTCOMES = `('unmatched', 'needs_review')`;

/**
 * Creates the week partitions of claims and events from the week of `from` (now, by default) to
 * WEEKS_AHEAD weeks after it, moving in any rows the DEFAULT partitions took for those weeks; returns
 * how many it created. Safe to call at any time and from several processes (an existing week is left
 * alone; the creations take one advisory lock).
 *
 * Each week is its own short transaction that gives way to the live path (givingWay): attaching a
 * week takes the DEFAULT partition's ACCESS EXCLUSIVE lock, to prove the DEFAULT holds nothing of the
 * week, and every admission and reconcile reads the DEFAULT partition (an ID is looked up in every
 * partition). Asked for while an admission waits for its workflow's start, that lock would queue every
 * later one behind it for as long as the admission lasted; now the request is bounded by the lock
 * timeout and retried, and the weeks are made WEEKS_AHEAD weeks early, so a retry has weeks to succeed.
 * (Migration 017's settle_ensure_partitions does the same in one statement, for a migration's own run.)
 */
export async function ensurePartitions(
  pool: pg.Pool,
  options: { from?: Date; weeks?: number; signal?: AbortSignal } = {},
): Promise<number> {
  const from = options.from ?? null;
  let created = 0;
  if (!(await claimStorePartitioned(pool))) return created;
  for (const parent of ['claims', 'events'] as const) {
    for (let week = 0; week <= (options.weeks ?? WEEKS_AHEAD); week += 1) {
      const made = await givingWay(options.signal, (lockTimeoutMs) =>
        withTransaction(pool, async (tx) => {
          // Two purges (or a purge and a migrator) at once create each week once.
          await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('settle_ensure_partitions', 0))`);
          // First the lock that only VACUUM, ANALYZE and DDL conflict with: waiting for an autovacuum
          // of the DEFAULT partition holds up no one (QUIET_LOCK_TIMEOUT_MS).
          await tx.query(`SET LOCAL lock_timeout = ${QUIET_LOCK_TIMEOUT_MS}`);
          await tx.query(`LOCK TABLE ${parent}_default IN SHARE UPDATE EXCLUSIVE MODE`);
          await tx.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
          const { rows } = await tx.query<{ created: boolean }>(
            `SELECT settle_create_week_partition($1::text,
                      (date_trunc('week', coalesce($2::timestamptz, now()) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                      + $3::int * interval '7 days') AS created`,
            [parent, from, week],
          );
          return rows[0]!.created;
        }),
      );
      if (made) created += 1;
    }
  }
  return created;
}

/**
 * How long a catalog change of the claim store (attaching or detaching a week) waits for its ACCESS
 * EXCLUSIVE lock before it gives way to the live path and retries: the live path queues behind the
 * request meanwhile, so the first attempts wait briefly and each retry twice as long.
 */
const LOCK_TIMEOUT_MS = { first: 200, max: 2_000 };
const LOCK_ATTEMPTS = 30;
/**
 * How long such a change waits, holding up no one, for what works on the tables it changes (an
 * autovacuum of a week just filled, or of a DEFAULT partition). PostgreSQL cancels an autovacuum that
 * blocks a lock request for `deadlock_timeout` (1 s by default); one that prevents wraparound it does not.
 */
const QUIET_LOCK_TIMEOUT_MS = 5_000;

/**
 * Runs `attempt` (one transaction) until it gets its locks: a lock timeout (55P03) or a deadlock
 * PostgreSQL broke by cancelling it (40P01) gave way to the live path, and the next try waits
 * longer, up to LOCK_ATTEMPTS tries.
 */
async function givingWay<T>(
  signal: AbortSignal | undefined,
  attempt: (lockTimeoutMs: number) => Promise<T>,
): Promise<T> {
  for (let tried = 1; ; tried += 1) {
    signal?.throwIfAborted();
    try {
      return await attempt(Math.min(LOCK_TIMEOUT_MS.max, LOCK_TIMEOUT_MS.first * 2 ** (tried - 1)));
    } catch (error) {
      const code = (error as { code?: string }).code;
      if ((code !== '55P03' && code !== '40P01') || tried >= LOCK_ATTEMPTS) throw error;
    }
  }
}

/** One period's partitions of claims and events (either may be absent), all of whose rows are older than `end`. */
export type ExpiredPeriod = {
  suffix: string;
  end: Date;
  claims?: string;
  events?: string;
  /** Detached by a purge that stopped before its DROP: its kept rows were moved in the same transaction. */
  detached?: boolean;
};

const PARTITION_NAME = /^(claims|events)_(w\d{8}|legacy)$/;

/** A catalog name checked against the partitions' naming, double-quoted for SQL. */
function ident(name: string): string {
  if (!PARTITION_NAME.test(name)) throw new Error(`not a claim-store partition: ${name}`);
  return `"${name}"`;
}

/**
 * The week and legacy partitions whose upper bound is at or before `cutoff` (so every row they can
 * hold is past it), paired by period, oldest first. The DEFAULT partitions are never listed.
 */
export async function listExpiredPeriods(db: Queryable, cutoff: Date): Promise<ExpiredPeriod[]> {
  const { rows } = await db.query<{ parent: 'claims' | 'events'; name: string; end: Date }>(
    `SELECT p.relname AS parent, c.relname AS name,
            substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz AS "end"
       FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       JOIN pg_class p ON p.oid = i.inhparent
      WHERE i.inhparent IN ('claims'::regclass, 'events'::regclass)
        AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'`,
  );
  const periods = new Map<string, ExpiredPeriod>();
  const leftovers = await db.query<{ parent: 'claims' | 'events'; name: string }>(
    `SELECT substring(relname FROM '^[a-z]+') AS parent, relname AS name FROM pg_class
      WHERE relname ~ '^(claims|events)_(w[0-9]{8}|legacy)$' AND relkind = 'r' AND NOT relispartition
        AND relnamespace = current_schema()::regnamespace`,
  );
  for (const row of leftovers.rows) {
    const suffix = row.name.slice(row.parent.length + 1);
    const period = periods.get(suffix) ?? { suffix, end: new Date(0), detached: true };
    period[row.parent] = row.name;
    periods.set(suffix, period);
  }
  for (const row of rows) {
    if (!(row.end.getTime() <= cutoff.getTime()) || !PARTITION_NAME.test(row.name)) continue;
    const suffix = row.name.slice(row.parent.length + 1);
    const period = periods.get(suffix) ?? { suffix, end: row.end };
    period[row.parent] = row.name;
    periods.set(suffix, period);
  }
  return [...periods.values()].sort((a, b) => a.end.getTime() - b.end.getTime());
}

/** What dropping one period removes, and what it moves to the DEFAULT partitions instead. */
export type PeriodPlan = {
  /** Rows of the period's partitions. */
  claimRows: number;
  eventRows: number;
  /** Open exceptions (unmatched, needs_review): moved, not dropped. */
  openClaims: number;
  /** Events with no claim, or an open one: moved, not dropped. */
  keptEventIds: string[];
};

/**
 * Counts a period's rows and finds the events it must keep: those no closed claim covers (an event
 * never reconciled is an open `failed` exception; an open claim needs its event to be replayed).
 *
 * One pass over the week: a full join of its events and claims on their primary keys gives both
 * counts and the events the week's claims do not cover. Once a week has been vacuumed (a week past
 * the retention has been, by autovacuum) PostgreSQL merges the two primary keys alone, index-only,
 * a quarter of the bytes of the tables; earlier it hashes the tables. The few events left are then
 * probed across the live partitions by their keys, and the week's events with an open claim (the
 * partial index claims_exceptions) added. The plan runs on one core, without parallel workers: it is
 * background work on a machine whose other cores serve the live path. Counting and anti-joining in
 * two passes of three processes each held the live path's p99 at 2.2 × idle while a 10 M-row week
 * was planned (RT, 5 Dec 2026).
 */
export async function planPeriod(pool: pg.Pool, period: ExpiredPeriod): Promise<PeriodPlan> {
  return withTransaction(pool, async (tx) => {
    await tx.query(`SET LOCAL max_parallel_workers_per_gather = 0`);
    const plan: PeriodPlan = { claimRows: 0, eventRows: 0, openClaims: 0, keptEventIds: [] };
    let uncovered: string[] = [];
    if (period.claims && period.events) {
      const { rows } = await tx.query<{ events: number; claims: number; uncovered: string[] }>(
        `SELECT count(e.event_id)::int AS events, count(c.event_id)::int AS claims,
                coalesce(array_agg(e.event_id) FILTER (WHERE c.event_id IS NULL), '{}') AS uncovered
           FROM ${ident(period.events)} e FULL JOIN ${ident(period.claims)} c ON c.event_id = e.event_id`,
      );
      ({ events: plan.eventRows, claims: plan.claimRows, uncovered } = rows[0]!);
    } else if (period.events) {
      const { rows } = await tx.query<{ events: number; uncovered: string[] }>(
        `SELECT count(*)::int AS events, coalesce(array_agg(event_id), '{}') AS uncovered
           FROM ${ident(period.events)}`,
      );
      ({ events: plan.eventRows, uncovered } = rows[0]!);
    } else if (period.claims) {
      const { rows } = await tx.query<{ claims: number }>(
        `SELECT count(*)::int AS claims FROM ${ident(period.claims)}`,
      );
      plan.claimRows = rows[0]!.claims;
    }
    if (period.claims) {
      const open = await tx.query<{ event_id: string; has_event: boolean }>(
        `SELECT c.event_id, ${period.events ? `EXISTS (SELECT 1 FROM ${ident(period.events)} e WHERE e.event_id = c.event_id)` : 'false'} AS has_event
           FROM ${ident(period.claims)} c WHERE c.outcome IN ${OPEN_OUTCOMES}`,
      );
      plan.openClaims = open.rows.length;
      plan.keptEventIds = open.rows.filter((row) => row.has_event).map((row) => row.event_id);
    }
    if (uncovered.length > 0) {
      const { rows } = await tx.query<{ event_id: string }>(
        `SELECT u.event_id FROM unnest($1::text[]) AS u(event_id)
          WHERE NOT EXISTS (SELECT 1 FROM claims c
                             WHERE c.event_id = u.event_id AND c.outcome NOT IN ${OPEN_OUTCOMES})`,
        [uncovered],
      );
      plan.keptEventIds.push(...rows.map((row) => row.event_id));
    }
    return plan;
  });
}

/**
 * Detaches a period's partitions, moves what must be kept into the DEFAULT partitions and drops the
 * rest whole: no row is deleted from the week, nothing is vacuumed, no WAL per row.
 *
 * The DETACH is the plain one: PostgreSQL refuses DETACH … CONCURRENTLY while a DEFAULT partition
 * exists. It takes the parents' ACCESS EXCLUSIVE lock for one short transaction (the catalog change
 * and the move of the kept rows, found by index); `lock_timeout` bounds how long the reconcile and
 * the gateway can queue behind it, and a detach that timed out is retried. It asks for that lock only
 * once nothing else works on the tables it detaches (QUIET_LOCK_TIMEOUT_MS). Once detached, the week is
 * no longer part of claims or events: the kept rows, inserted into the parents, land in the DEFAULT
 * partitions (no week covers their timestamps any more). Returns the rows moved and dropped.
 */
export async function dropPeriod(
  pool: pg.Pool,
  period: ExpiredPeriod,
  plan: PeriodPlan,
  signal?: AbortSignal,
): Promise<{ claims: number; events: number }> {
  let moved = { claims: plan.openClaims, events: plan.keptEventIds.length };
  if (!period.detached) {
    moved = await givingWay(signal, (lockTimeoutMs) =>
      withTransaction(pool, async (tx) => {
        // First the lock that only VACUUM, ANALYZE and DDL conflict with, on every table the DETACH
        // locks besides the parents (a DEFAULT partition's constraint changes with it): waiting for
        // it holds up no reconcile and no admission. Waiting for them under the parents' lock held
        // the live path for 1.4 s while an autovacuum worked on the week (RT at 10 M, 5 Dec 2026).
        await tx.query(`SET LOCAL lock_timeout = ${QUIET_LOCK_TIMEOUT_MS}`);
        const weeks = [period.claims, period.events].flatMap((name) => (name ? [ident(name)] : []));
        await tx.query(
          `LOCK TABLE ${[...weeks, 'claims_default', 'events_default'].join(', ')} IN SHARE UPDATE EXCLUSIVE MODE`,
        );
        await tx.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
        if (period.claims) await tx.query(`ALTER TABLE claims DETACH PARTITION ${ident(period.claims)}`);
        if (period.events) await tx.query(`ALTER TABLE events DETACH PARTITION ${ident(period.events)}`);
        const claims = period.claims
          ? await tx.query(
              `INSERT INTO claims SELECT * FROM ${ident(period.claims)} WHERE outcome IN ${OPEN_OUTCOMES}`,
            )
          : undefined;
        // The planned ones, and any whose claim a compensation made open since the plan. Every
        // statement under the parents' lock reads by index (the open claims by the partial index
        // claims_exceptions, the week's events by key), never the week's millions of rows: a scan
        // here held the live path behind the lock for seconds (RT at 10 M claims, 4 Dec 2026).
        const events = period.events
          ? await tx.query(
              `INSERT INTO events SELECT * FROM ${ident(period.events)} e
                WHERE e.event_id = ANY ($1::text[] || ARRAY(
                        SELECT event_id FROM claims WHERE outcome IN ${OPEN_OUTCOMES}))`,
              [plan.keptEventIds],
            )
          : undefined;
        return { claims: claims?.rowCount ?? 0, events: events?.rowCount ?? 0 };
      }),
    );
  }
  let orphans = 0;
  if (period.claims) {
    // Events a DEFAULT partition holds for the closed claims dropped now (kept earlier while their
    // claim was not yet written): they go with their claim, as the DELETE purge removed them.
    const deleted = await pool.query(
      `DELETE FROM events_default d USING ${ident(period.claims)} c
        WHERE c.event_id = d.event_id AND c.outcome NOT IN ${OPEN_OUTCOMES}`,
    );
    orphans = deleted.rowCount ?? 0;
  }
  if (period.claims) await pool.query(`DROP TABLE ${ident(period.claims)}`);
  if (period.events) await pool.query(`DROP TABLE ${ident(period.events)}`);
  return { claims: plan.claimRows - moved.claims, events: plan.eventRows - moved.events + orphans };
}

/**
 * The claim store's size on disk: claims and events with every partition (a partitioned parent has
 * no storage of its own), in bytes, and the part of it that is indexes.
 */
export async function claimStoreSize(db: Queryable): Promise<{ bytes: number; indexBytes: number }> {
  const { rows } = await db.query<{ bytes: string; index_bytes: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::text AS bytes,
            coalesce(sum(pg_indexes_size(relid)), 0)::text AS index_bytes
       FROM (SELECT relid FROM pg_partition_tree('claims') WHERE isleaf
             UNION ALL SELECT relid FROM pg_partition_tree('events') WHERE isleaf) AS leaves`,
  );
  return { bytes: Number(rows[0]!.bytes), indexBytes: Number(rows[0]!.index_bytes) };
}

/**
 * The partitions the purge deletes from row by row, to the exact cutoff: the DEFAULT ones, and a
 * legacy one (a migrated database's old table) while its range still reaches past the cutoff, so the
 * rows it holds from before the migration go at their age as they always did, not weeks later.
 * Before the contract step, the plain tables themselves.
 */
export async function rowPurgedPartitions(db: Queryable): Promise<{ claims: string; events: string }[]> {
  if (!(await claimStorePartitioned(db))) return [{ claims: 'claims', events: 'events' }];
  const { rows } = await db.query<{ legacy: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('claims_legacy')) AS legacy`,
  );
  return [
    { claims: 'claims_default', events: 'events_default' },
    ...(rows[0]!.legacy ? [{ claims: 'claims_legacy', events: 'events_legacy' }] : []),
  ];
}
