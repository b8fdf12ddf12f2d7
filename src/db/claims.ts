import type { ReconcileOutcome } from '../domain/lifecycles';
import type { Queryable } from './pool';

export type ClaimOutcome = ReconcileOutcome;

export type Claim = {
  eventId: string;
  payloadSha256: string;
  outcome: ClaimOutcome;
  shipmentId: string | null;
  claimedAt: Date;
};

const COLUMNS = `event_id AS "eventId", payload_sha256 AS "payloadSha256", outcome,
  shipment_id AS "shipmentId", claimed_at AS "claimedAt"`;

/**
 * Serialises every transaction that reconciles the same event ID, so the claim check and the
 * mutation cannot interleave; the primary key on claims remains the backstop.
 */
export async function lockEventId(db: Queryable, eventId: string): Promise<void> {
  await db.query({
    name: 'claims.lock_event_id',
    text: 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))',
    values: [eventId],
  });
}

export async function findClaim(db: Queryable, eventId: string): Promise<Claim | undefined> {
  const { rows } = await db.query<Claim>({
    name: 'claims.find',
    text: `SELECT ${COLUMNS} FROM claims WHERE event_id = $1::text`,
    values: [eventId],
  });
  return rows[0];
}

/**
 * The claim of the event ID, if any, and the payload hash its `events` row was stored with, if it was:
 * what the reconcile decides on, in one round trip.
 */
export async function findClaimAndStoredSha(
  db: Queryable,
  eventId: string,
): Promise<{ claim: Claim | undefined; storedPayloadSha256: string | undefined }> {
  const { rows } = await db.query<Partial<Claim> & { storedPayloadSha256: string | null }>({
    name: 'claims.find_with_stored_sha',
    text: `SELECT c.event_id AS "eventId", c.payload_sha256 AS "payloadSha256", c.outcome,
                  c.shipment_id AS "shipmentId", c.claimed_at AS "claimedAt",
                  e.payload_sha256 AS "storedPayloadSha256"
             FROM (VALUES ($1::text)) AS k (event_id)
             LEFT JOIN claims c ON c.event_id = k.event_id
             LEFT JOIN events e ON e.event_id = k.event_id`,
    values: [eventId],
  });
  const { storedPayloadSha256, ...claim } = rows[0]!;
  return {
    claim: claim.eventId === null || claim.eventId === undefined ? undefined : (claim as Claim),
    storedPayloadSha256: storedPayloadSha256 ?? undefined,
  };
}

/**
 * Inserts the claim. Returns the seconds from the event's receipt (its `events` row) to this claim, the
 * event-to-commit latency (the claim commits with the transaction that writes it), or undefined for an
 * event that has no `events` row (only a claim written before the reconcile checked admission).
 */
export async function insertClaim(
  db: Queryable,
  claim: {
    eventId: string;
    payloadSha256: string;
    outcome: ClaimOutcome;
    shipmentId: string;
    /** Why a `needs_review` outcome needs review (a payment that does not match its shipment). */
    reviewReason?: string;
  },
): Promise<number | undefined> {
  const { rows } = await db.query<{ seconds: number | null }>({
    name: 'claims.insert',
    text: `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, review_reason)
           VALUES ($1::text, $2::text, $3::text, $4::text, $5::text)
           RETURNING EXTRACT(EPOCH FROM claimed_at -
             (SELECT received_at FROM events WHERE event_id = $1::text))::float8 AS seconds`,
    values: [claim.eventId, claim.payloadSha256, claim.outcome, claim.shipmentId, claim.reviewReason ?? null],
  });
  return rows[0]?.seconds ?? undefined;
}

export async function updateClaimOutcome(
  db: Queryable,
  eventId: string,
  outcome: ClaimOutcome,
  reviewReason?: string,
): Promise<void> {
  await db.query(
    `UPDATE claims SET outcome = $2::text, review_reason = coalesce($3::text, review_reason), updated_at = now()
      WHERE event_id = $1::text`,
    [eventId, outcome, reviewReason ?? null],
  );
}

/** Unmatched events whose shipment now exists: what `settle replay --unmatched` applies. Oldest first. */
export async function listReplayableUnmatched(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ event_id: string }>(
    `SELECT c.event_id FROM claims c JOIN shipments s USING (shipment_id)
      WHERE c.outcome = 'unmatched'
      ORDER BY c.claimed_at, c.event_id`,
  );
  return rows.map((row) => row.event_id);
}
