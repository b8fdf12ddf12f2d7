import type { Queryable } from './pool';

export type ExceptionKind = 'unmatched' | 'conflict' | 'failed' | 'needs_review';
export const EXCEPTION_KINDS: ExceptionKind[] = ['unmatched', 'conflict', 'failed', 'needs_review'];

export type ExceptionRow = {
  kind: ExceptionKind;
  event_id: string;
  shipment_id: string | null;
  /** When the exception began: the claim, the first conflicting delivery, the receipt. */
  since: string;
  detail: string;
};

/**
 * Every event an operator has to look at: parked as unmatched, delivered again with another payload
 * (409), failed (a downstream delivery failed permanently, or no claim long after receipt: the
 * workflow failed or no worker ran it), or marked needs_review by a compensation. Oldest first.
 */
export async function listExceptions(
  db: Queryable,
  options: { kinds?: ExceptionKind[]; unreconciledAfterMs: number; limit: number },
): Promise<ExceptionRow[]> {
  const kinds = options.kinds?.length ? options.kinds : EXCEPTION_KINDS;
  const { rows } = await db.query<Omit<ExceptionRow, 'since'> & { since: Date }>(
    `SELECT * FROM (
       SELECT outcome AS kind, event_id, shipment_id, claimed_at AS since,
              CASE outcome WHEN 'unmatched' THEN 'no shipment ' || coalesce(shipment_id, '?') || ' when reconciled'
                           ELSE 'a later step failed and was compensated' END AS detail
         FROM claims WHERE outcome IN ('unmatched', 'needs_review')
       UNION ALL
       SELECT 'unmatched', event_id, NULL, first_seen_at,
              reason || ' (a ' || provider || ' event settle cannot apply or replay: name the shipment at '
                || 'the provider for later events, and record this payment by hand)'
         FROM provider_exceptions
       UNION ALL
       SELECT 'conflict', event_id, NULL, first_seen_at,
              deliveries || ' delivery(ies) with another payload (sha256 ' || left(payload_sha256, 12)
                || '…) refused with 409; the original stands'
         FROM conflicts
       UNION ALL
       SELECT 'failed', event_id, shipment_id, created_at,
              target || '.' || action || ' failed after ' || attempts || ' attempt(s)'
                || coalesce(': ' || last_error, '')
         FROM outbox WHERE status = 'failed'
       UNION ALL
       SELECT 'failed', e.event_id, e.payload #>> '{data,shipment_id}', e.received_at,
              'not reconciled ' || floor(EXTRACT(EPOCH FROM now() - e.received_at) / 60) || ' min after receipt'
                || ' (workflow failed, or no worker polls the task queue)'
         FROM events e LEFT JOIN claims c USING (event_id)
        WHERE c.event_id IS NULL AND e.received_at < now() - ($2::bigint * interval '1 millisecond')
     ) exceptions
     WHERE kind = ANY($1::text[])
     ORDER BY since, event_id
     LIMIT $3::int`,
    [kinds, options.unreconciledAfterMs, options.limit],
  );
  return rows.map((row) => ({ ...row, since: row.since.toISOString() }));
}
