import type { Queryable } from './pool';

/** The deployment_settings key of the delivery stuck threshold (milliseconds). */
const DELIVERY_STUCK_AFTER_KEY = 'delivery_stuck_after_ms';

/**
 * Writes the deployment's stuck threshold and returns the value it replaced (undefined when none, or
 * the same). The last writer wins: a gateway started later with another SETTLE_DELIVERY_STUCK_AFTER
 * sets the threshold for every surface, and its caller logs a warning.
 */
export async function writeDeliveryStuckAfter(
  db: Queryable,
  valueMs: number,
  writtenBy: string,
): Promise<number | undefined> {
  const { rows } = await db.query<{ previous: string | null }>(
    `WITH previous AS (SELECT value FROM deployment_settings WHERE key = $1::text)
     INSERT INTO deployment_settings (key, value, written_by) VALUES ($1::text, $2::bigint, $3::text)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, written_by = EXCLUDED.written_by,
                                     written_at = now()
     RETURNING (SELECT value FROM previous)::text AS previous`,
    [DELIVERY_STUCK_AFTER_KEY, Math.round(valueMs), writtenBy],
  );
  const previous = rows[0]?.previous;
  return previous !== null && previous !== undefined && Number(previous) !== Math.round(valueMs)
    ? Number(previous)
    : undefined;
}
