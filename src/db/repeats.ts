import type { EventSource } from './events';
import type { Queryable } from './pool';

/**
 * Records a delivery refused with 409: the event ID was known with another payload. Only this audit
 * row is written; the event, its claim and its effect are never touched.
 */
export async function recordConflict(
  db: Queryable,
  conflict: { eventId: string; payloadSha256: string; payload: unknown; source: EventSource },
): Promise<void> {
  await db.query(
    `INSERT INTO conflicts (event_id, payload_sha256, payload, source)
     VALUES ($1::text, $2::text, $3::jsonb, $4::text)
     ON CONFLICT (event_id, payload_sha256)
     DO UPDATE SET deliveries = conflicts.deliveries + 1, last_seen_at = now()`,
    [conflict.eventId, conflict.payloadSha256, JSON.stringify(conflict.payload), conflict.source],
  );
}

/**
 * Counts a redelivery of a known event (answered `duplicate`), for the duplicate-rate SLO. A prepared
 * statement (events has a partition per week, which an unprepared UPDATE plans on every call) that
 * commits without waiting for its WAL flush (synchronous_commit off for this statement's transaction
 * alone): a count is bookkeeping the answer does not depend on, so in a provider's retry storm the
 * duplicates do not queue for the disk beside the commits that admit and apply live events. A crash
 * of PostgreSQL can lose the last fraction of a second of counts, never an event or an effect.
 */
export async function recordRedelivery(db: Queryable, eventId: string): Promise<void> {
  await db.query({
    name: 'events.count-redelivery',
    text: `WITH bookkeeping AS (SELECT set_config('synchronous_commit', 'off', true))
      UPDATE events SET duplicate_deliveries = duplicate_deliveries + 1, last_duplicate_at = now()
        FROM bookkeeping WHERE event_id = $1::text`,
    values: [eventId],
  });
}

/** Counts a reconcile that found its claim already there (the claim refused a second effect). */
export async function recordRepeatClaim(db: Queryable, eventId: string): Promise<void> {
  await db.query(`UPDATE claims SET repeat_claims = repeat_claims + 1 WHERE event_id = $1::text`, [eventId]);
}
