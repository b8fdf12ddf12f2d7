import type { RecoveryCursor } from '../providers/recovery-source';
import type { Queryable } from './pool';

export type RecoveryStatus = {
  provider: string;
  cursor: RecoveryCursor | null;
  movedAt: Date | null;
  lastSweepAt: Date | null;
  lastSweepError: string | null;
  lastListed: number;
  lastRecovered: number;
  recoveredTotal: number;
};

export async function readRecoveryCursor(db: Queryable, provider: string): Promise<RecoveryCursor | null> {
  const { rows } = await db.query<{ eventId: string | null; createdAt: Date | null }>(
    `SELECT event_id AS "eventId", event_created_at AS "createdAt" FROM recovery_cursors
      WHERE provider = $1::text`,
    [provider],
  );
  const row = rows[0];
  return row?.eventId && row.createdAt ? { eventId: row.eventId, createdAt: row.createdAt } : null;
}

/**
 * Moves the cursor to `cursor`, never backwards: a position older than the stored one (a concurrent
 * `settle recover` behind the Schedule's sweep) changes nothing. The caller passes only a position up
 * to which every listed event was admitted.
 */
export async function advanceRecoveryCursor(
  db: Queryable,
  provider: string,
  cursor: RecoveryCursor,
): Promise<void> {
  await db.query(
    `INSERT INTO recovery_cursors (provider, event_id, event_created_at, moved_at)
     VALUES ($1::text, $2::text, $3::timestamptz, now())
     ON CONFLICT (provider) DO UPDATE
       SET event_id = EXCLUDED.event_id, event_created_at = EXCLUDED.event_created_at, moved_at = now()
       WHERE recovery_cursors.event_created_at IS NULL
          OR recovery_cursors.event_created_at <= EXCLUDED.event_created_at`,
    [provider, cursor.eventId, cursor.createdAt],
  );
}

/** The outcome of one sweep, for `settle stats`: `error` null when it completed. */
export async function recordRecoverySweep(
  db: Queryable,
  provider: string,
  sweep: { listed: number; recovered: number; error: string | null },
): Promise<void> {
  await db.query(
    `INSERT INTO recovery_cursors (provider, last_sweep_at, last_sweep_error, last_listed, last_recovered,
                                   recovered_total)
     VALUES ($1::text, now(), $2::text, $3::int, $4::int, $4::int)
     ON CONFLICT (provider) DO UPDATE
       SET last_sweep_at = now(), last_sweep_error = EXCLUDED.last_sweep_error,
           last_listed = EXCLUDED.last_listed, last_recovered = EXCLUDED.last_recovered,
           recovered_total = recovery_cursors.recovered_total + EXCLUDED.last_recovered`,
    [provider, sweep.error, sweep.listed, sweep.recovered],
  );
}

export async function listRecoveryStatus(db: Queryable): Promise<RecoveryStatus[]> {
  const { rows } = await db.query<
    Omit<RecoveryStatus, 'cursor' | 'recoveredTotal'> & {
      eventId: string | null;
      createdAt: Date | null;
      recoveredTotal: string;
    }
  >(
    `SELECT provider, event_id AS "eventId", event_created_at AS "createdAt", moved_at AS "movedAt",
            last_sweep_at AS "lastSweepAt", last_sweep_error AS "lastSweepError",
            last_listed AS "lastListed", last_recovered AS "lastRecovered",
            recovered_total AS "recoveredTotal"
       FROM recovery_cursors ORDER BY provider`,
  );
  return rows.map(({ eventId, createdAt, recoveredTotal, ...row }) => ({
    ...row,
    cursor: eventId && createdAt ? { eventId, createdAt } : null,
    recoveredTotal: Number(recoveredTotal),
  }));
}
