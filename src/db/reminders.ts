import type { ReminderState } from '../domain/lifecycles';
import type { Queryable } from './pool';

export type { ReminderState };

export type Reminder = {
  deliveryId: string;
  contractId: string;
  dueAt: Date;
  webhookUrl: string;
  payload: unknown;
  requestSha256: string;
  workflowId: string;
  state: ReminderState;
  attempts: number;
  leaseExpiresAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  completedAt: Date | null;
};

export type ReminderAttempt = {
  attempt: number;
  startedAt: Date;
  leaseExpiresAt: Date;
  finishedAt: Date | null;
  statusCode: number | null;
  error: string | null;
};

const COLUMNS = `delivery_id AS "deliveryId", contract_id AS "contractId", due_at AS "dueAt",
  webhook_url AS "webhookUrl", payload, request_sha256 AS "requestSha256", workflow_id AS "workflowId", state,
  attempts, lease_expires_at AS "leaseExpiresAt", last_error AS "lastError", created_at AS "createdAt",
  completed_at AS "completedAt"`;

/** Inserts the reminder unless its delivery ID is known; true when this call inserted it. */
export async function insertReminder(
  db: Queryable,
  reminder: Pick<
    Reminder,
    'deliveryId' | 'contractId' | 'dueAt' | 'webhookUrl' | 'payload' | 'requestSha256' | 'workflowId'
  >,
): Promise<boolean> {
  await lockDeliveryId(db, reminder.deliveryId);
  const { rowCount } = await db.query(
    `INSERT INTO reminders (delivery_id, contract_id, due_at, webhook_url, payload, request_sha256, workflow_id)
     VALUES ($1::text, $2::text, $3::timestamptz, $4::text, $5::jsonb, $6::text, $7::text)
     ON CONFLICT (delivery_id) DO NOTHING`,
    [
      reminder.deliveryId,
      reminder.contractId,
      reminder.dueAt,
      reminder.webhookUrl,
      JSON.stringify(reminder.payload),
      reminder.requestSha256,
      reminder.workflowId,
    ],
  );
  return rowCount === 1;
}

export async function findReminder(db: Queryable, deliveryId: string): Promise<Reminder | undefined> {
  const { rows } = await db.query<Reminder>(`SELECT ${COLUMNS} FROM reminders WHERE delivery_id = $1::text`, [
    deliveryId,
  ]);
  return rows[0];
}

export async function listReminderAttempts(db: Queryable, deliveryId: string): Promise<ReminderAttempt[]> {
  const { rows } = await db.query<ReminderAttempt>(
    `SELECT attempt, started_at AS "startedAt", lease_expires_at AS "leaseExpiresAt", finished_at AS "finishedAt",
            status_code AS "statusCode", error
       FROM reminder_attempts WHERE delivery_id = $1::text ORDER BY attempt`,
    [deliveryId],
  );
  return rows;
}

/** Cancels a reminder that has not started delivering; undefined when it is past that point (or unknown). */
export async function cancelScheduledReminder(
  db: Queryable,
  deliveryId: string,
): Promise<Reminder | undefined> {
  const { rows } = await db.query<Reminder>(
    `UPDATE reminders SET state = 'cancelled', completed_at = now(), updated_at = now()
      WHERE delivery_id = $1::text AND state = 'scheduled'
      RETURNING ${COLUMNS}`,
    [deliveryId],
  );
  return rows[0];
}

/** Locks the reminder for a delivery decision; `leaseRemainingMs` is measured on the database clock. */
/**
 * Serialises the admission of a reminder and its deliveries: admission inserts the row under this
 * lock and commits only after Temporal accepted the run, so a run due at once, whose delivery asks
 * before that commit, waits for it instead of finding no row. Seed 1 keeps it apart from the event
 * IDs' lock (claims.lockEventId, seed 0).
 */
async function lockDeliveryId(db: Queryable, deliveryId: string): Promise<void> {
  await db.query({
    name: 'reminders.lock_delivery_id',
    text: 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 1))',
    values: [deliveryId],
  });
}

export async function lockReminder(
  db: Queryable,
  deliveryId: string,
): Promise<(Reminder & { leaseRemainingMs: number }) | undefined> {
  await lockDeliveryId(db, deliveryId);
  const { rows } = await db.query<Reminder & { leaseRemainingMs: number }>(
    `SELECT ${COLUMNS},
            GREATEST(0, COALESCE(EXTRACT(EPOCH FROM lease_expires_at - now()) * 1000, 0))::float8
              AS "leaseRemainingMs"
       FROM reminders WHERE delivery_id = $1::text FOR UPDATE`,
    [deliveryId],
  );
  return rows[0];
}

/** Moves the reminder to `processing` under a fresh lease and records the attempt; returns its number. */
export async function beginReminderAttempt(
  db: Queryable,
  deliveryId: string,
  leaseMs: number,
): Promise<number> {
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE reminders
        SET state = 'processing', attempts = attempts + 1, updated_at = now(),
            lease_expires_at = now() + make_interval(secs => $2::float8 / 1000)
      WHERE delivery_id = $1::text
      RETURNING attempts`,
    [deliveryId, leaseMs],
  );
  const attempt = rows[0]!.attempts;
  await db.query(
    `INSERT INTO reminder_attempts (delivery_id, attempt, lease_expires_at)
     SELECT delivery_id, attempts, lease_expires_at FROM reminders WHERE delivery_id = $1::text`,
    [deliveryId],
  );
  return attempt;
}

/**
 * Records how an attempt ended and releases its lease. Only the attempt that still owns the reminder
 * may move it: a late answer from an attempt whose lease was taken over changes only its own record.
 */
export async function finishReminderAttempt(
  db: Queryable,
  deliveryId: string,
  attempt: number,
  result: { state: 'succeeded' | 'failed' | 'processing'; statusCode: number | null; error: string | null },
): Promise<void> {
  await db.query(
    `UPDATE reminder_attempts SET finished_at = now(), status_code = $3::int, error = $4::text
      WHERE delivery_id = $1::text AND attempt = $2::int`,
    [deliveryId, attempt, result.statusCode, result.error],
  );
  await db.query(
    `UPDATE reminders
        SET state = $3::text, last_error = $4::text, lease_expires_at = NULL, updated_at = now(),
            completed_at = CASE WHEN $3::text IN ('succeeded', 'failed') THEN now() END
      WHERE delivery_id = $1::text AND attempts = $2::int AND state = 'processing'`,
    [deliveryId, attempt, result.state, result.error],
  );
}

/**
 * Gives up on a reminder that is still open (its retries ran out); finished ones are left as they are.
 * Resolves with the attempts on record, 0 for an unknown reminder.
 */
export async function failOpenReminder(db: Queryable, deliveryId: string, reason: string): Promise<number> {
  await db.query(
    `UPDATE reminders
        SET state = 'failed', last_error = $2::text, lease_expires_at = NULL, completed_at = now(), updated_at = now()
      WHERE delivery_id = $1::text AND state IN ('scheduled', 'processing')`,
    [deliveryId, reason],
  );
  const { rows } = await db.query<{ attempts: number }>(
    'SELECT attempts FROM reminders WHERE delivery_id = $1::text',
    [deliveryId],
  );
  return rows[0]?.attempts ?? 0;
}
