import type { Queryable } from './pool';

/** Latency figures in seconds; null when there was nothing to measure. */
export type Percentiles = { p50: number | null; p99: number | null; max: number | null; count: number };

/** The SLO figures settle can compute from PostgreSQL alone, over the window ending now. */
export type SloFigures = {
  window: { since: string; until: string };
  events: { accepted: number; by_source: Record<string, number> };
  /** Repeat deliveries answered `duplicate`, and deliveries refused with 409. */
  duplicate_deliveries: number;
  conflicting_deliveries: number;
  claims: { total: number; by_outcome: Record<string, number>; repeat_claims: number };
  /** Share of reconciles that found their claim already there. */
  duplicate_claim_rate: number | null;
  event_to_commit_seconds: Percentiles;
  /** Unmatched events later applied by a replay: from park to fix. */
  replay_recovery_seconds: Percentiles;
  outbox: { pending: number; oldest_pending_age_seconds: number | null; failed: number };
  /** Reminder deliveries past due and not yet delivered. */
  reminders: { overdue: number; oldest_overdue_age_seconds: number | null };
};

const PERCENTILES = (expression: string) => `
  percentile_cont(0.5) WITHIN GROUP (ORDER BY ${expression})::float8 AS p50,
  percentile_cont(0.99) WITHIN GROUP (ORDER BY ${expression})::float8 AS p99,
  max(${expression})::float8 AS max,
  count(*)::int AS count`;

/** Reminder deliveries past their due time and not yet delivered (none before migration 002). */
export async function reminderBacklog(
  db: Queryable,
): Promise<{ overdue: number; oldestOverdueAgeSeconds: number | null }> {
  const { rows: exists } = await db.query<{ present: boolean }>(
    `SELECT to_regclass('reminders') IS NOT NULL AS present`,
  );
  if (!exists[0]?.present) return { overdue: 0, oldestOverdueAgeSeconds: null };
  const { rows } = await db.query<{ overdue: number; oldest: number | null }>(
    `SELECT count(*)::int AS overdue, EXTRACT(EPOCH FROM now() - min(due_at))::float8 AS oldest
       FROM reminders WHERE state IN ('scheduled', 'processing') AND due_at < now()`,
  );
  return { overdue: rows[0]!.overdue, oldestOverdueAgeSeconds: rows[0]!.oldest };
}

/**
 * Undelivered outbox rows (pending, and parked as `not_configured`: not delivered either) and the
 * oldest one's age in seconds, what the oldest-pending-age gauge shows; and the failed ones.
 */
export async function outboxBacklog(
  db: Queryable,
): Promise<{ pending: number; oldestPendingAgeSeconds: number | null; failed: number }> {
  const { rows } = await db.query<{ pending: number; oldest: number | null; failed: number }>(
    `SELECT count(*) FILTER (WHERE status <> 'failed')::int AS pending,
            EXTRACT(EPOCH FROM now() - min(created_at) FILTER (WHERE status <> 'failed'))::float8 AS oldest,
            count(*) FILTER (WHERE status = 'failed')::int AS failed
       FROM outbox WHERE status IN ('pending', 'not_configured', 'failed')`,
  );
  const row = rows[0]!;
  return { pending: row.pending, oldestPendingAgeSeconds: row.oldest, failed: row.failed };
}

export async function computeSloFigures(db: Queryable, options: { windowMs: number }): Promise<SloFigures> {
  const { rows: bounds } = await db.query<{ since: Date; until: Date }>(
    `SELECT now() - ($1::bigint * interval '1 millisecond') AS since, now() AS until`,
    [options.windowMs],
  );
  const { since, until } = bounds[0]!;
  const args = [since];

  const [events, repeats, claims, commit, recovery, outbox, reminders] = await Promise.all([
    db.query<{ source: string; n: number }>(
      `SELECT source, count(*)::int AS n FROM events WHERE received_at >= $1::timestamptz GROUP BY source`,
      args,
    ),
    db.query<{ duplicates: number; conflicts: number }>(
      `SELECT (SELECT coalesce(sum(duplicate_deliveries), 0) FROM events
                WHERE last_duplicate_at >= $1::timestamptz)::int AS duplicates,
              (SELECT coalesce(sum(deliveries), 0) FROM conflicts
                WHERE last_seen_at >= $1::timestamptz)::int AS conflicts`,
      args,
    ),
    db.query<{ outcome: string; n: number; repeats: number }>(
      `SELECT outcome, count(*)::int AS n, sum(repeat_claims)::int AS repeats
         FROM claims WHERE claimed_at >= $1::timestamptz GROUP BY outcome`,
      args,
    ),
    db.query<Percentiles>(
      `SELECT ${PERCENTILES('EXTRACT(EPOCH FROM c.claimed_at - e.received_at)')}
         FROM claims c JOIN events e USING (event_id) WHERE c.claimed_at >= $1::timestamptz`,
      args,
    ),
    db.query<Percentiles>(
      `SELECT ${PERCENTILES('EXTRACT(EPOCH FROM updated_at - claimed_at)')}
         FROM claims
        WHERE updated_at >= $1::timestamptz AND updated_at > claimed_at AND outcome IN ('applied', 'stale')`,
      args,
    ),
    outboxBacklog(db),
    reminderBacklog(db),
  ]);

  const bySource = Object.fromEntries(events.rows.map((row) => [row.source, row.n]));
  const byOutcome = Object.fromEntries(claims.rows.map((row) => [row.outcome, row.n]));
  const totalClaims = claims.rows.reduce((sum, row) => sum + row.n, 0);
  const repeatClaims = claims.rows.reduce((sum, row) => sum + row.repeats, 0);
  return {
    window: { since: since.toISOString(), until: until.toISOString() },
    events: { accepted: events.rows.reduce((sum, row) => sum + row.n, 0), by_source: bySource },
    duplicate_deliveries: repeats.rows[0]!.duplicates,
    conflicting_deliveries: repeats.rows[0]!.conflicts,
    claims: { total: totalClaims, by_outcome: byOutcome, repeat_claims: repeatClaims },
    duplicate_claim_rate: totalClaims ? repeatClaims / (totalClaims + repeatClaims) : null,
    event_to_commit_seconds: commit.rows[0]!,
    replay_recovery_seconds: recovery.rows[0]!,
    outbox: {
      pending: outbox.pending,
      oldest_pending_age_seconds: outbox.oldestPendingAgeSeconds,
      failed: outbox.failed,
    },
    reminders: { overdue: reminders.overdue, oldest_overdue_age_seconds: reminders.oldestOverdueAgeSeconds },
  };
}
