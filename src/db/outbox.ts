import type { Queryable } from './pool';
import { shiftParameters } from './sql';

import { DELIVERABLE_STATUSES, type OutboxStatus, type OutboxTarget } from '../domain/outbox';

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

/** A row whose attempt was started: with whether its target is paused or failing now (target_pressure). */
export type StartedOutboxRow = OutboxRow & { targetTroubled: boolean };

const ENTRY_COLUMNS = `outbox_id AS "outboxId", target, action, idempotency_key AS "idempotencyKey", status`;

/** What the workflow needs of an outbox row to deliver it (OutboxEntry in src/domain/workflow-contracts.ts). */
export type OutboxEntryRow = Pick<OutboxRow, 'outboxId' | 'target' | 'action' | 'idempotencyKey' | 'status'>;

/**
 * A stored outbox row as workflow history carries it: those fields, nothing a query adds (what the
 * reconcile and the compensation return).
 */
export function outboxEntry(row: OutboxEntryRow): OutboxEntryRow {
  return {
    outboxId: row.outboxId,
    target: row.target,
    action: row.action,
    idempotencyKey: row.idempotencyKey,
    status: row.status,
  };
}

export type NewOutboxRow = Pick<OutboxRow, 'target' | 'action' | 'idempotencyKey' | 'body'>;

/**
 * Adds an event's downstream effects (a row whose idempotency key exists is left as it is) and returns
 * all of the event's rows in order, the new and any earlier ones: what `listOutboxForEvent` would say
 * after the inserts, in one round trip. The SELECT does not see the CTE's inserts (one snapshot), so
 * they come from RETURNING. With no rows it only lists.
 */
export async function insertOutboxRowsAndList(
  db: Queryable,
  event: { eventId: string; shipmentId: string },
  rows: NewOutboxRow[],
): Promise<OutboxEntryRow[]> {
  const { rows: entries } = await db.query<OutboxEntryRow>({
    name: 'outbox.insert_and_list',
    text: `WITH inserted AS (${insertOutboxRows()})
           ${LIST_WITH_INSERTED}
           ORDER BY "outboxId"`,
    values: outboxInsertValues(event, rows),
  });
  return entries;
}

/**
 * The INSERT of an event's new outbox rows, returning ENTRY_COLUMNS, then each row's body, attempts and
 * creation time; its parameters are $1 to $6 of outboxInsertValues. `startKey`, a parameter naming one
 * row's idempotency key: that row is stored with its first attempt counted, as startOutboxAttempt
 * would count it right after. For a CTE named `inserted`, which LIST_WITH_INSERTED reads.
 */
export const insertOutboxRows = (startKey?: string) =>
  `INSERT INTO outbox (event_id, shipment_id, target, action, idempotency_key, body, attempts)
             SELECT $1::text, $2::text, target, action, idempotency_key, body::jsonb,
                    ${startKey ? `CASE WHEN idempotency_key = ${startKey}::text THEN 1 ELSE 0 END` : '0'}
               FROM unnest($3::text[], $4::text[], $5::text[], $6::text[])
                      AS added (target, action, idempotency_key, body)
             ON CONFLICT (idempotency_key) DO NOTHING
             RETURNING ${ENTRY_COLUMNS}, body, attempts, created_at AS "createdAt"`;

/** All of the event's rows: those stored before this statement and those its `inserted` CTE added. */
export const LIST_WITH_INSERTED = `SELECT ${ENTRY_COLUMNS} FROM outbox WHERE event_id = $1::text
           UNION ALL
           SELECT "outboxId", target, action, "idempotencyKey", status FROM inserted`;

/** $1 to $6 of insertOutboxRows. */
export function outboxInsertValues(event: { eventId: string; shipmentId: string }, rows: NewOutboxRow[]) {
  return [
    event.eventId,
    event.shipmentId,
    rows.map((row) => row.target),
    rows.map((row) => row.action),
    rows.map((row) => row.idempotencyKey),
    rows.map((row) => JSON.stringify(row.body)),
  ];
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
 * record, and returns the row: one statement on the common path. Only a pending row, or one parked as
 * `not_configured` (it is pending again), whose target is one of `targets` (those with a URL on this
 * worker) is attempted; undefined otherwise, and the caller reads the row to say why.
 */
export async function startOutboxAttempt(
  db: Queryable,
  outboxId: number,
  targets: readonly OutboxTarget[],
  /** Only a row of this event (the run's own); undefined: any (no run to compare, a script). */
  eventId?: string,
): Promise<StartedOutboxRow | undefined> {
  const { rows } = await db.query<StartedOutboxRow>({
    name: 'outbox.start_attempt',
    text: START_ATTEMPT,
    values: [outboxId, targets, DELIVERABLE_STATUSES, eventId ?? null],
  });
  return rows[0];
}

/**
 * $1 the row, $2 the targets this worker can call, $3 DELIVERABLE_STATUSES, $4 its event (null: any).
 * Its target's state comes with it, so a call to a target with no limits and no trouble costs no
 * statement of its own.
 */
const START_ATTEMPT = `UPDATE outbox SET attempts = attempts + 1, status = 'pending', updated_at = now()
      WHERE outbox_id = $1::bigint AND status = ANY($3::text[]) AND target = ANY($2::text[])
        AND ($4::text IS NULL OR event_id = $4::text)
      RETURNING ${COLUMNS},
        coalesce((SELECT tp.probing FROM target_pressure tp WHERE tp.target = outbox.target), false)
          AS "targetTroubled"`;

/** START_ATTEMPT after markOutboxDelivered's two parameters. */
const START_ATTEMPT_AFTER_DELIVERED = shiftParameters(START_ATTEMPT, 2);

/** Takes back a counted attempt that was never made (a pending row only). */
export async function releaseOutboxAttempt(db: Queryable, outboxId: number): Promise<void> {
  await db.query(
    `UPDATE outbox SET attempts = greatest(attempts - 1, 0), updated_at = now()
      WHERE outbox_id = $1::bigint AND status = 'pending'`,
    [outboxId],
  );
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

export async function markOutboxDelivered(
  db: Queryable,
  outboxId: number,
  /** A carrier release: the shipment is `released` in the same statement. */
  releasedShipmentId?: string,
  /** The row to deliver next, whose attempt startOutboxAttempt would count: counted here instead. */
  next?: { outboxId: number; targets: readonly OutboxTarget[]; eventId?: string },
): Promise<StartedOutboxRow | undefined> {
  // Data-modifying WITHs run to completion whatever the outer statement reads: all or none.
  const { rows } = await db.query<StartedOutboxRow>({
    name: 'outbox.mark_delivered_then_start',
    text: `WITH delivered AS (
        UPDATE outbox SET status = 'delivered', last_error = NULL, delivered_at = now(), updated_at = now()
         WHERE outbox_id = $1::bigint AND status = 'pending'),
      released AS (
        UPDATE shipments SET hold_status = 'released', updated_at = now()
         WHERE $2::text IS NOT NULL AND shipment_id = $2::text)
      ${START_ATTEMPT_AFTER_DELIVERED}`,
    values: [
      outboxId,
      releasedShipmentId ?? null,
      next?.outboxId ?? null,
      next?.targets ?? [],
      DELIVERABLE_STATUSES,
      next?.eventId ?? null,
    ],
  });
  return rows[0];
}

/** A delivered (or possibly applied) effect that the saga undid downstream. */
export async function markOutboxCompensated(db: Queryable, outboxId: number, note: string): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'compensated', last_error = $2::text, updated_at = now()
      WHERE outbox_id = $1::bigint AND status <> 'compensated'`,
    [outboxId, note],
  );
}

/**
 * Parks a pending row whose target has no URL on this worker: an exception an operator sees, sent by a
 * replay once the target is configured.
 */
export async function markOutboxNotConfigured(db: Queryable, outboxId: number, note: string): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'not_configured', last_error = $2::text, updated_at = now()
      WHERE outbox_id = $1::bigint AND status = ANY($3::text[])`,
    [outboxId, note, DELIVERABLE_STATUSES],
  );
}

/** Notes something about a row without changing its status (a compensation refused). */
export async function noteOutbox(db: Queryable, outboxId: number, note: string): Promise<void> {
  await db.query(`UPDATE outbox SET last_error = $2::text, updated_at = now() WHERE outbox_id = $1::bigint`, [
    outboxId,
    note,
  ]);
}

/**
 * The event's effects that will never be sent, because an earlier step was refused: `failed`, with why.
 * A row parked as `not_configured` is abandoned too: configuring its target later must not send it.
 */
export async function abandonPendingOutbox(db: Queryable, eventId: string, reason: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE outbox SET status = 'failed', last_error = $2::text, updated_at = now()
      WHERE event_id = $1::text AND status = ANY($3::text[])`,
    [eventId, reason, DELIVERABLE_STATUSES],
  );
  return rowCount ?? 0;
}
