import type { Queryable } from './pool';

/** Records a start whose outcome is unknown (see migration 007); a repeat counts on the same row. */
export async function recordStartOutcomeUnknown(
  db: Queryable,
  start: { eventId: string; workflowId: string },
): Promise<void> {
  await db.query(
    `INSERT INTO start_outcome_unknown (event_id, workflow_id) VALUES ($1::text, $2::text)
     ON CONFLICT (event_id)
     DO UPDATE SET occurrences = start_outcome_unknown.occurrences + 1, last_at = now()`,
    [start.eventId, start.workflowId],
  );
}

/** When a start of this event last ended with its outcome unknown, if ever. */
export async function findStartOutcomeUnknown(
  db: Queryable,
  eventId: string,
): Promise<{ firstAt: Date; lastAt: Date; occurrences: number } | undefined> {
  const { rows } = await db.query<{ first_at: Date; last_at: Date; occurrences: number }>(
    `SELECT first_at, last_at, occurrences FROM start_outcome_unknown WHERE event_id = $1::text`,
    [eventId],
  );
  const row = rows[0];
  return row ? { firstAt: row.first_at, lastAt: row.last_at, occurrences: row.occurrences } : undefined;
}
