import { storableJson } from '../domain/untrusted-json';
import type { Queryable } from './pool';

/**
 * Records a provider event that names no shipment, once per event ID; a redelivery counts
 * `deliveries`. Listed by `settle exceptions` as `unmatched`.
 */
export async function recordProviderException(
  db: Queryable,
  row: {
    eventId: string;
    provider: string;
    providerType: string;
    reason: string;
    payload: unknown;
    /** What the operator does next; unset: the shipment-less event's step (src/db/exceptions.ts). */
    nextStep?: string;
  },
): Promise<{ first: boolean }> {
  const { rows } = await db.query<{ first: boolean }>(
    `INSERT INTO provider_exceptions (event_id, provider, provider_type, reason, payload, next_step)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::text)
     ON CONFLICT (event_id) DO UPDATE
       SET deliveries = provider_exceptions.deliveries + 1, last_seen_at = now()
     RETURNING (xmax = 0) AS first`,
    [
      row.eventId,
      row.provider,
      row.providerType,
      row.reason,
      storableJson(row.payload),
      row.nextStep ?? null,
    ],
  );
  return rows[0]!;
}
