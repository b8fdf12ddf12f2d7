import { lockEventId } from './claims';
import type { Queryable } from './pool';

export type EventSource = 'webhook' | 'import' | 'replay' | 'recovery';

export type StoredEvent = {
  eventId: string;
  type: string;
  payload: Record<string, unknown>;
  payloadSha256: string;
  workflowId: string;
  source: EventSource;
  receivedAt: Date;
};

const COLUMNS = `event_id AS "eventId", type, payload, payload_sha256 AS "payloadSha256",
  workflow_id AS "workflowId", source, received_at AS "receivedAt"`;

/**
 * The stored payload's hash of an event, or undefined when settle does not have it: all the door needs
 * to tell a duplicate from a conflict. It leaves the payload in PostgreSQL, so a provider's retry storm
 * (every delivery a duplicate) costs one narrow lookup per delivery.
 */
export async function findEventHash(db: Queryable, eventId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ payloadSha256: string }>({
    name: 'events.find-hash',
    text: `SELECT payload_sha256 AS "payloadSha256" FROM events WHERE event_id = $1::text`,
    values: [eventId],
  });
  return rows[0]?.payloadSha256;
}

export async function findEvent(db: Queryable, eventId: string): Promise<StoredEvent | undefined> {
  const { rows } = await db.query<StoredEvent>({
    name: 'events.find',
    text: `SELECT ${COLUMNS} FROM events WHERE event_id = $1::text`,
    values: [eventId],
  });
  return rows[0];
}

/**
 * How admission stores an event: under the event ID's advisory lock, the one the reconcile takes
 * first (claims.lockEventId), held until the admission's transaction ends (free when the transaction
 * began holding it: withTransaction's `lockEventId`). The row commits only after the workflow start
 * is durable, and a worker may run the reconcile before that (eager start, the
 * local first attempt); the lock makes that reconcile wait for the commit (the row is then there) or
 * the rollback (it is not), so it never decides on a row that is merely not yet visible.
 *
 * events is partitioned by week (migration 017) with no key across the weeks: the ID is looked up in
 * every partition under that lock, so an ID stays unique for the whole retention (a week's own key
 * is the backstop inside the week).
 *
 * `inserted`: this call stored the event. `refusedRun`: a run of its workflow ID was refused as not
 * admitted (recorded under the same lock, so read after it this cannot change until the commit).
 */
export async function insertAdmittedEvent(
  tx: Queryable,
  event: Omit<StoredEvent, 'receivedAt'>,
): Promise<{ inserted: boolean; refusedRun: boolean }> {
  await lockEventId(tx, event.eventId);
  // A statement of its own after the lock: its snapshot sees what committed while this one waited.
  const { rows } = await tx.query<{ refused_run: boolean }>({
    name: 'events.insert_admitted',
    text: `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, source)
     SELECT $1::text, $2::text, $3::jsonb, $4::text, $5::text, $6::text
      WHERE NOT EXISTS (SELECT 1 FROM events WHERE event_id = $1::text)
     ON CONFLICT DO NOTHING
     RETURNING EXISTS (SELECT 1 FROM unadmitted_runs WHERE workflow_id = $5::text) AS refused_run`,
    values: [
      event.eventId,
      event.type,
      JSON.stringify(event.payload),
      event.payloadSha256,
      event.workflowId,
      event.source,
    ],
  });
  return { inserted: rows.length === 1, refusedRun: rows[0]?.refused_run ?? false };
}

/**
 * not_stored, payload_differs: refused by the reconcile. foreign_start: found holding the workflow ID
 * when settle started the event's run, terminated. invalid_input: failed on its input, before any step.
 */
export type UnadmittedReason = 'not_stored' | 'payload_differs' | 'foreign_start' | 'invalid_input';

export type UnadmittedRun = {
  workflowId: string;
  runId: string;
  eventId: string;
  payloadSha256: string;
  shipmentId: string | null;
  eventType: string;
  reason: UnadmittedReason;
};

/**
 * Records a run the reconcile refused (migration 011); a later attempt of the same run counts on its
 * row. True when this call recorded the run for the first time, so each run is counted once. A run
 * recorded as `invalid_input` keeps that reason when a later start finds it holding the ID (it had
 * failed on its input; the start only replaced it).
 */
export async function recordUnadmittedRun(db: Queryable, run: UnadmittedRun): Promise<boolean> {
  const { rows } = await db.query<{ inserted: boolean }>(
    `INSERT INTO unadmitted_runs (workflow_id, run_id, event_id, payload_sha256, shipment_id, event_type, reason)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text)
     ON CONFLICT (workflow_id, run_id)
     DO UPDATE SET attempts = unadmitted_runs.attempts + 1, last_at = now(),
                   reason = CASE WHEN unadmitted_runs.reason = 'invalid_input' THEN unadmitted_runs.reason
                                 ELSE EXCLUDED.reason END
     RETURNING (xmax = 0) AS inserted`,
    [run.workflowId, run.runId, run.eventId, run.payloadSha256, run.shipmentId, run.eventType, run.reason],
  );
  return rows[0]?.inserted ?? false;
}
