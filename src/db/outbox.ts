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
