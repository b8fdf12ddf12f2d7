import { DELIVERY_TARGETS, OUTBOX_TARGETS } from '../domain/outbox';
import type { QueryResult, QueryResultRow } from 'pg';
import type { Queryable } from './pool';

/** Each delivery target's URL variable, bound as two arrays: the SQL names what is unset from the table. */
const TARGET_NAMES = OUTBOX_TARGETS;
const TARGET_VARIABLES = OUTBOX_TARGETS.map((target) => DELIVERY_TARGETS[target].variable);

/**
 * The condition on a target_pressure row (the target gate's, activities/target-gate.ts) that makes its
 * target open: failing without a success for its SETTLE_<TARGET>_OPEN_AFTER.
 */
export const OPEN_TARGET = `failing_since IS NOT NULL
        AND failing_since + open_after_ms * interval '1 millisecond' <= now()`;

export const EXCEPTION_KINDS = [
  'unmatched',
  'conflict',
  'failed',
  'needs_review',
  'delivery_stuck',
  'not_configured',
  'delivery_abandoned',
  'unadmitted_run',
  'target_unavailable',
] as const;
export type ExceptionKind = (typeof EXCEPTION_KINDS)[number];

type Resolution = { resolved_by: string; resolved_at: string; note: string };

export type ExceptionRow = {
  kind: ExceptionKind;
  event_id: string;
  shipment_id: string | null;
  /** When the exception began: the claim, the first conflicting delivery, the receipt, the outbox row. */
  since: string;
  detail: string;
  /** The delivery concerned (carrier, erp), its attempts so far and its last error; null for the others. */
  target: string | null;
  attempts: number | null;
  last_error: string | null;
  /** Set when an operator closed it (listed only with `includeResolved`). */
  resolution: Resolution | null;
};

export type ExceptionFilter = {
  kinds?: readonly ExceptionKind[];
  /** Only these events. */
  eventIds?: readonly string[];
  /** An event without a claim this long after receipt has `failed`. */
  unreconciledAfterMs: number;
  /**
   * A delivery still retrying this long after it was written is `delivery_stuck`: only a fallback, used
   * while no gateway has written the deployment's threshold (deployment_settings, migration 009), which
   * every surface reads so that all of them list the same set.
   */
  stuckAfterMs: number;
  /** Pending outbox rows whose run is known to have ended without them (see app/exceptions.ts). */
  abandonedOutboxIds: readonly number[];
  includeResolved?: boolean;
  /** At most this many rows, oldest first; null: all of them. */
  limit: number | null;
};

/**
 * Every exception an operator has to look at, oldest first: a delivery target open (failing without a
 * success for its SETTLE_<TARGET>_OPEN_AFTER; event ID `target:<name>`, closed by itself when a probe
 * succeeds); parked as unmatched; delivered again with
 * another payload (409); failed (a delivery failed permanently, or no claim long after receipt: the
 * workflow failed or no worker ran it); marked needs_review by a compensation; a delivery retrying for
 * longer than the stuck threshold; a delivery that found no target URL; a delivery left pending by a
 * run that ended (cancelled, terminated); a run settle did not start, without effect (unadmitted_run,
 * one row per run: refused by its reconcile, unless an admitted run of the same payload applied the
 * event since, as when settle's own start outlived a lost commit; terminated and replaced by settle's
 * start; failed on its input). An exception closed by a later resolution of its event and
 * kind is left out unless `includeResolved`. `settle exceptions`, `settle stats` and the
 * settle_open_exceptions gauge all count this one list.
 */
export async function listExceptions(db: Queryable, filter: ExceptionFilter): Promise<ExceptionRow[]> {
  const { rows } = await queryExceptions<
    Omit<ExceptionRow, 'since' | 'resolution'> & {
      since: Date;
      resolved_by: string | null;
      resolved_at: Date | null;
      note: string | null;
    }
  >(db, filter, 'rows');
  return rows.map(({ resolved_by, resolved_at, note, ...row }) => ({
    ...row,
    since: row.since.toISOString(),
    resolution:
      resolved_by && resolved_at
        ? { resolved_by, resolved_at: resolved_at.toISOString(), note: note ?? '' }
        : null,
  }));
}

/**
 * Open exceptions by kind, counted by PostgreSQL (every kind present, 0 when none): the same list,
 * what the settle_open_exceptions gauge shows, without loading a row.
 */
export async function countExceptions(
  db: Queryable,
  filter: Pick<ExceptionFilter, 'unreconciledAfterMs' | 'stuckAfterMs' | 'abandonedOutboxIds'>,
): Promise<Record<ExceptionKind, number>> {
  const { rows } = await queryExceptions<{ kind: ExceptionKind; n: number }>(
    db,
    { ...filter, limit: null },
    'counts',
  );
  const counts = Object.fromEntries(EXCEPTION_KINDS.map((kind) => [kind, 0])) as Record<
    ExceptionKind,
    number
  >;
  for (const row of rows) counts[row.kind] = row.n;
  return counts;
}

/** The one exceptions query: its rows oldest first, or how many of each kind. */
function queryExceptions<Row extends QueryResultRow>(
  db: Queryable,
  filter: ExceptionFilter,
  shape: 'rows' | 'counts',
): Promise<QueryResult<Row>> {
  const kinds = filter.kinds?.length ? filter.kinds : EXCEPTION_KINDS;
  return db.query<Row>(
    `WITH exceptions AS (
       SELECT outcome AS kind, event_id, shipment_id, claimed_at AS since,
              CASE outcome WHEN 'unmatched' THEN 'no shipment ' || coalesce(shipment_id, '?') || ' when reconciled'
                           ELSE coalesce('the payment does not match its shipment: ' || review_reason
                                           || '; nothing was applied or released',
                                         'a later step failed and was compensated') END AS detail,
              NULL::text AS target, NULL::int AS attempts, NULL::text AS last_error
         FROM claims WHERE outcome IN ('unmatched', 'needs_review')
       UNION ALL
       SELECT 'unmatched', event_id, NULL, first_seen_at,
              reason || coalesce(' (' || next_step || ')',
                ' (a ' || provider || ' event settle cannot apply or replay: name the shipment at '
                || 'the provider for later events, and record this payment by hand)'),
              NULL, NULL, NULL
         FROM provider_exceptions
       UNION ALL
       SELECT 'conflict', event_id, NULL, first_seen_at,
              deliveries || ' delivery(ies) with another payload (sha256 ' || left(payload_sha256, 12)
                || '…) refused with 409; the original stands',
              NULL, NULL, NULL
         FROM conflicts
       UNION ALL
       SELECT 'failed', event_id, shipment_id, created_at,
              target || '.' || action || ' failed after ' || attempts || ' attempt(s)'
                || coalesce(': ' || last_error, ''),
              target, attempts, last_error
         FROM outbox WHERE status = 'failed'
       UNION ALL
       SELECT 'failed', e.event_id, e.payload #>> '{data,shipment_id}', e.received_at,
              'not reconciled ' || floor(EXTRACT(EPOCH FROM now() - e.received_at) / 60) || ' min after receipt'
                || ' (workflow failed, or no worker polls the task queue)',
              NULL, NULL, NULL
         FROM events e LEFT JOIN claims c USING (event_id)
        WHERE c.event_id IS NULL AND e.received_at < now() - ($2::bigint * interval '1 millisecond')
       UNION ALL
       SELECT CASE WHEN outbox_id = ANY($4::bigint[]) THEN 'delivery_abandoned' ELSE 'delivery_stuck' END,
              event_id, shipment_id, created_at,
              CASE WHEN outbox_id = ANY($4::bigint[])
                   THEN target || '.' || action || ' still pending after ' || attempts
                          || ' attempt(s), and its run has ended: nothing will deliver it'
                   ELSE target || '.' || action || ' retrying for '
                          || floor(EXTRACT(EPOCH FROM now() - created_at) / 60) || ' min, ' || attempts
                          || ' attempt(s)' END
                || coalesce(', last error: ' || last_error, ''),
              target, attempts, last_error
         FROM outbox
        WHERE status = 'pending'
          AND (outbox_id = ANY($4::bigint[])
               OR ((attempts > 0 OR last_error IS NOT NULL)
                   AND created_at < now() - (coalesce((SELECT value FROM deployment_settings
                                                      WHERE key = 'delivery_stuck_after_ms'), $3::bigint)
                                            * interval '1 millisecond')))
       UNION ALL
       SELECT 'not_configured', event_id, shipment_id, created_at,
              target || '.' || action || ' not sent: the worker that ran it has no ' || upper(target)
                || ' URL (' || (SELECT variable FROM unnest($8::text[], $9::text[]) AS t (name, variable)
                                 WHERE t.name = outbox.target) || ')',
              target, attempts, last_error
         FROM outbox WHERE status = 'not_configured'
       UNION ALL
       SELECT 'unadmitted_run', u.event_id, u.shipment_id, u.first_at,
              'run ' || u.workflow_id || ' (run ID ' || u.run_id || ', ' || u.event_type || ') '
                || CASE u.reason
                     WHEN 'not_stored' THEN 'was refused: settle never stored this event; nothing was applied'
                     WHEN 'payload_differs' THEN 'was refused: its payload (sha256 ' || left(u.payload_sha256, 12)
                                        || '…) is not the one settle stored; nothing was applied'
                     WHEN 'foreign_start' THEN 'was not started by settle and held this workflow ID: settle '
                                        || 'terminated it (if it still ran) and started its own run'
                     ELSE 'was not started by settle and failed on its input before any step; nothing was applied'
                   END,
              NULL, NULL, NULL
         FROM unadmitted_runs u
        WHERE u.reason IN ('foreign_start', 'invalid_input')
           OR NOT EXISTS (SELECT 1 FROM events e JOIN claims c USING (event_id)
                           WHERE e.event_id = u.event_id AND e.payload_sha256 = u.payload_sha256
                             AND c.payload_sha256 = u.payload_sha256)
       UNION ALL
       SELECT 'target_unavailable', 'target:' || target, NULL,
              failing_since + open_after_ms * interval '1 millisecond',
              'the ' || target || ' has failed without a success since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                || ' (' || failures || ' failure(s)' || coalesce(', last: ' || last_error, '')
                || '): settle sends it one probe at a time and holds every other call; nothing is lost',
              target, NULL, last_error
         FROM target_pressure WHERE ${OPEN_TARGET}
     )
     SELECT ${shape === 'rows' ? 'x.*, r.resolved_by, r.resolved_at, r.note' : 'x.kind, count(*)::int AS n'}
       FROM exceptions x
       LEFT JOIN LATERAL (
         SELECT resolved_by, resolved_at, note FROM exception_resolutions r
          WHERE r.event_id = x.event_id AND r.kind = x.kind AND r.resolved_at >= x.since
          ORDER BY resolved_at DESC LIMIT 1
       ) r ON true
      WHERE x.kind = ANY($1::text[])
        AND ($5::text[] IS NULL OR x.event_id = ANY($5::text[]))
        AND ($6::boolean OR r.resolved_at IS NULL)
      ${shape === 'rows' ? 'ORDER BY x.since, x.event_id, x.target NULLS FIRST' : 'GROUP BY x.kind'}
      LIMIT $7::int`,
    [
      kinds,
      filter.unreconciledAfterMs,
      filter.stuckAfterMs,
      filter.abandonedOutboxIds,
      filter.eventIds ?? null,
      filter.includeResolved ?? false,
      filter.limit,
      TARGET_NAMES,
      TARGET_VARIABLES,
    ],
  );
}

/**
 * Events with outbox rows left pending for a while: the candidates for `delivery_abandoned`, whose run
 * has to be asked whether it still runs. Oldest first, at most `limit` events.
 */
export async function eventsWithIdlePendingOutbox(
  db: Queryable,
  options: { idleForMs: number; limit: number },
): Promise<{ eventId: string; outboxIds: number[] }[]> {
  const { rows } = await db.query<{ eventId: string; outboxIds: string[] }>(
    `SELECT event_id AS "eventId", array_agg(outbox_id ORDER BY outbox_id)::text[] AS "outboxIds"
       FROM outbox
      WHERE status = 'pending' AND updated_at < now() - ($1::bigint * interval '1 millisecond')
      GROUP BY event_id
      ORDER BY min(created_at)
      LIMIT $2::int`,
    [options.idleForMs, options.limit],
  );
  return rows.map((row) => ({ eventId: row.eventId, outboxIds: row.outboxIds.map(Number) }));
}

export type ResolutionRecord = { event_id: string; kind: ExceptionKind } & Resolution;

/** Records that an operator closed these exceptions (append-only: the audit trail). */
export async function insertResolutions(
  db: Queryable,
  resolutions: { eventId: string; kind: ExceptionKind }[],
  audit: { resolvedBy: string; note: string },
): Promise<ResolutionRecord[]> {
  if (!resolutions.length) return [];
  const { rows } = await db.query<Omit<ResolutionRecord, 'resolved_at'> & { resolved_at: Date }>(
    `INSERT INTO exception_resolutions (event_id, kind, resolved_by, note)
     SELECT event_id, kind, $3::text, $4::text FROM unnest($1::text[], $2::text[]) AS r (event_id, kind)
     RETURNING event_id, kind, resolved_by, resolved_at, note`,
    [resolutions.map((r) => r.eventId), resolutions.map((r) => r.kind), audit.resolvedBy, audit.note],
  );
  return rows.map((row) => ({ ...row, resolved_at: row.resolved_at.toISOString() }));
}

/** An event without a claim this long after receipt is `failed` (workflow failed, or no worker). */
export const DEFAULT_UNRECONCILED_AFTER_MS = 15 * 60_000;

/** A target failing without a success for its SETTLE_<TARGET>_OPEN_AFTER. */
export type OpenTarget = {
  target: string;
  failingSince: Date;
  openedAt: Date;
  failures: number;
  lastError: string | null;
};

/** The targets open now (a probe has not yet succeeded), oldest first: the gauge, stats and exceptions read it. */
export async function listOpenTargets(db: Queryable): Promise<OpenTarget[]> {
  const { rows } = await db.query<OpenTarget>(
    `SELECT target, failing_since AS "failingSince",
            failing_since + open_after_ms * interval '1 millisecond' AS "openedAt",
            failures, last_error AS "lastError"
       FROM target_pressure
      WHERE ${OPEN_TARGET}
      ORDER BY failing_since`,
  );
  return rows;
}
