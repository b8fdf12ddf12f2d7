import type { Queryable } from './pool';

type LedgerKind = 'capture' | 'refund' | 'reversal';

export type LedgerEntry = {
  entryId: number;
  kind: LedgerKind;
  shipmentId: string;
  paymentId: string;
  eventId: string;
  amount: number;
  currency: string;
  reversesEntryId: number | null;
  createdAt: Date;
};

const COLUMNS = `entry_id AS "entryId", kind, shipment_id AS "shipmentId", payment_id AS "paymentId",
  event_id AS "eventId", amount, currency, reverses_entry_id AS "reversesEntryId", created_at AS "createdAt"`;

/**
 * Appends an entry unless its uniqueness rule already holds one (one capture per payment, one refund
 * per event and one per refund key, one reversal per entry); returns the new entry, or undefined when
 * it already existed. `refundKey` names the provider's refund object (Stripe `re_…`), so two events
 * reporting the same refund append one refund entry.
 */
export async function appendLedgerEntry(
  db: Queryable,
  entry: Omit<LedgerEntry, 'entryId' | 'createdAt' | 'reversesEntryId'> & {
    reversesEntryId?: number;
    refundKey?: string;
  },
): Promise<LedgerEntry | undefined> {
  const { rows } = await db.query<LedgerEntry>({
    name: 'ledger.append',
    text: `INSERT INTO ledger_entries (kind, shipment_id, payment_id, event_id, amount, currency, reverses_entry_id,
             refund_key)
           VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::bigint, $8::text)
           ON CONFLICT DO NOTHING
           RETURNING ${COLUMNS}`,
    values: [
      entry.kind,
      entry.shipmentId,
      entry.paymentId,
      entry.eventId,
      entry.amount,
      entry.currency,
      entry.reversesEntryId ?? null,
      entry.kind === 'refund' ? (entry.refundKey ?? null) : null,
    ],
  });
  return rows[0];
}

export async function listLedgerForShipment(db: Queryable, shipmentId: string): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerEntry>(
    `SELECT ${COLUMNS} FROM ledger_entries WHERE shipment_id = $1::text ORDER BY entry_id`,
    [shipmentId],
  );
  return rows;
}

/** The money entries (capture, refund) an event itself appended; reversals are not reversed again. */
export async function listReversibleEntriesForEvent(db: Queryable, eventId: string): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerEntry>(
    `SELECT ${COLUMNS} FROM ledger_entries
      WHERE event_id = $1::text AND kind IN ('capture', 'refund') ORDER BY entry_id`,
    [eventId],
  );
  return rows;
}
