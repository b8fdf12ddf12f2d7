import type { PaymentStatus } from '../domain/payment-rules';
import type { Queryable } from './pool';
import { SET_PAYMENT_STATUS } from './shipments';
import { shiftParameters } from './sql';

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
  entry: NewLedgerEntry,
): Promise<LedgerEntry | undefined> {
  const { rows } = await db.query<LedgerEntry>({
    name: 'ledger.append',
    text: INSERT_ENTRY,
    values: entryValues(entry),
  });
  return rows[0];
}

export type NewLedgerEntry = Omit<LedgerEntry, 'entryId' | 'createdAt' | 'reversesEntryId'> & {
  reversesEntryId?: number;
  refundKey?: string;
};

/**
 * A payment's new status on its (locked) shipment and the ledger entry it appends, if any, in one
 * statement: both or neither. Returns the entry as appendLedgerEntry does.
 */
export async function setPaymentStatusAndAppend(
  db: Queryable,
  change: { shipmentId: string; paymentStatus: PaymentStatus; paymentId: string; eventId: string },
  entry: NewLedgerEntry | undefined,
): Promise<LedgerEntry | undefined> {
  const values = [change.shipmentId, change.paymentStatus, change.paymentId, change.eventId];
  if (!entry) {
    await db.query({ name: 'shipments.set_payment_status', text: SET_PAYMENT_STATUS, values });
    return undefined;
  }
  const { rows } = await db.query<LedgerEntry>({
    name: 'ledger.append_with_status',
    text: `WITH status AS (${STATUS_AFTER_ENTRY}) ${INSERT_ENTRY}`,
    values: [...entryValues(entry), ...values],
  });
  return rows[0];
}

const INSERT_ENTRY = `INSERT INTO ledger_entries (kind, shipment_id, payment_id, event_id, amount, currency,
             reverses_entry_id, refund_key)
           VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::bigint, $8::text)
           ON CONFLICT DO NOTHING
           RETURNING ${COLUMNS}`;

/** SET_PAYMENT_STATUS with its parameters numbered after the entry's eight. */
const STATUS_AFTER_ENTRY = shiftParameters(SET_PAYMENT_STATUS, 8);

function entryValues(entry: NewLedgerEntry) {
  return [
    entry.kind,
    entry.shipmentId,
    entry.paymentId,
    entry.eventId,
    entry.amount,
    entry.currency,
    entry.reversesEntryId ?? null,
    entry.kind === 'refund' ? (entry.refundKey ?? null) : null,
  ];
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
