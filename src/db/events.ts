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

export async function findEvent(db: Queryable, eventId: string): Promise<StoredEvent | undefined> {
  const { rows } = await db.query<StoredEvent>(`SELECT ${COLUMNS} FROM events WHERE event_id = $1::text`, [
    eventId,
  ]);
  return rows[0];
}

/** Inserts the event unless its ID is known; true when this call inserted it. */
export async function insertEvent(db: Queryable, event: Omit<StoredEvent, 'receivedAt'>): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, source)
     VALUES ($1::text, $2::text, $3::jsonb, $4::text, $5::text, $6::text)
     ON CONFLICT (event_id) DO NOTHING`,
    [
      event.eventId,
      event.type,
      JSON.stringify(event.payload),
      event.payloadSha256,
      event.workflowId,
      event.source,
    ],
  );
  return rowCount === 1;
}
