import type { Queryable } from './pool';

export type OutboxTarget = 'carrier' | 'erp';
export type OutboxStatus = 'pending' | 'delivered' | 'failed' | 'compensated';

export type OutboxRow = {
  outboxId: number;
  eventId: string;
  shipmentId: string;
  target: OutboxTarget;
  action: string;
  idempotencyKey: string;
  body: Record<string, unknown>;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
};

const COLUMNS = `outbox_id AS "outboxId", event_id AS "eventId", shipment_id AS "shipmentId", target, action,
  idempotency_key AS "idempotencyKey", body, status, attempts, last_error AS "lastError",
  created_at AS "createdAt", delivered_at AS "deliveredAt"`;

export async function insertOutboxRow(
  db: Queryable,
  row: Pick<OutboxRow, 'eventId' | 'shipmentId' | 'target' | 'action' | 'idempotencyKey' | 'body'>,
): Promise<void> {
  await db.query(
    `INSERT INTO outbox (event_id, shipment_id, target, action, idempotency_key, body)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb)
     ON CONFLICT (idempotency_key) DO NOTHING`,
    [row.eventId, row.shipmentId, row.target, row.action, row.idempotencyKey, JSON.stringify(row.body)],
  );
}

export async function listOutboxForEvent(db: Queryable, eventId: string): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `SELECT ${COLUMNS} FROM outbox WHERE event_id = $1::text ORDER BY outbox_id`,
    [eventId],
  );
  return rows;
}

export async function findOutboxRow(db: Queryable, outboxId: number): Promise<OutboxRow | undefined> {
  const { rows } = await db.query<OutboxRow>(`SELECT ${COLUMNS} FROM outbox WHERE outbox_id = $1::bigint`, [
    outboxId,
  ]);
  return rows[0];
}

/**
 * Counts an attempt before the call is made, so an attempt whose worker died mid-call is still on
 * record. Only a pending row can be attempted; undefined when the row has left `pending`.
 */
export async function startOutboxAttempt(db: Queryable, outboxId: number): Promise<OutboxRow | undefined> {
  const { rows } = await db.query<OutboxRow>(
    `UPDATE outbox SET attempts = attempts + 1, updated_at = now()
      WHERE outbox_id = $1::bigint AND status = 'pending'
      RETURNING ${COLUMNS}`,
    [outboxId],
  );
  return rows[0];
}

/** Records why the last attempt did not deliver; `failed` when no retry will follow. */
export async function recordOutboxError(
  db: Queryable,
  outboxId: number,
  error: string,
  status: 'pending' | 'failed',
): Promise<void> {
  await db.query(
    `UPDATE outbox SET last_error = $2::text, status = $3::text, updated_at = now()
      WHERE outbox_id = $1::bigint AND status = 'pending'`,
    [outboxId, error, status],
  );
}

export async function markOutboxDelivered(db: Queryable, outboxId: number): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'delivered', last_error = NULL, delivered_at = now(), updated_at = now()
      WHERE outbox_id = $1::bigint AND status = 'pending'`,
    [outboxId],
  );
}

/** A delivered (or possibly applied) effect that the saga undid downstream. */
export async function markOutboxCompensated(db: Queryable, outboxId: number, note: string): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'compensated', last_error = $2::text, updated_at = now()
      WHERE outbox_id = $1::bigint AND status <> 'compensated'`,
    [outboxId, note],
  );
}

/** Notes something about a row without changing its status (a compensation refused, a target unset). */
export async function noteOutbox(db: Queryable, outboxId: number, note: string): Promise<void> {
  await db.query(`UPDATE outbox SET last_error = $2::text, updated_at = now() WHERE outbox_id = $1::bigint`, [
    outboxId,
    note,
  ]);
}

/** The event's effects that will never be sent, because an earlier step was refused: `failed`, with why. */
export async function abandonPendingOutbox(db: Queryable, eventId: string, reason: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE outbox SET status = 'failed', last_error = $2::text, updated_at = now()
      WHERE event_id = $1::text AND status = 'pending'`,
    [eventId, reason],
  );
  return rowCount ?? 0;
}
