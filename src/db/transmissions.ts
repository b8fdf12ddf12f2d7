import type { Queryable } from './pool';

/**
 * A provider transmission taken once: `first` when this call took it, `same` when it was taken
 * before with the same body (a repeat of the delivery), `other` when it was taken with another body
 * (counted on the row; the first body stands).
 */
export type TransmissionTake = 'first' | 'same' | 'other';

/**
 * Takes a transmission ID with its body's SHA-256, durably (autocommit). A concurrent take of the
 * same ID waits on the primary key; the second statement, with a snapshot of its own, then sees the
 * body that won.
 */
export async function takeTransmission(
  db: Queryable,
  transmission: { provider: string; transmissionId: string; bodySha256: string },
): Promise<TransmissionTake> {
  const params = [transmission.provider, transmission.transmissionId, transmission.bodySha256];
  const inserted = await db.query(
    `INSERT INTO provider_transmissions (provider, transmission_id, body_sha256)
     VALUES ($1::text, $2::text, $3::text)
     ON CONFLICT (provider, transmission_id) DO NOTHING`,
    params,
  );
  if (inserted.rowCount === 1) return 'first';
  const refused = await db.query(
    `UPDATE provider_transmissions SET refused_bodies = refused_bodies + 1
      WHERE provider = $1::text AND transmission_id = $2::text AND body_sha256 <> $3::text`,
    params,
  );
  return refused.rowCount === 1 ? 'other' : 'same';
}
