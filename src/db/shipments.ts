import type { PaymentExpectation, PaymentStatus } from '../domain/payment-rules';
import type { Queryable } from './pool';

export type Shipment = {
  shipmentId: string;
  paymentStatus: PaymentStatus;
  paymentId: string | null;
  holdStatus: 'held' | 'released';
};

const COLUMNS = `shipment_id AS "shipmentId", payment_status AS "paymentStatus", payment_id AS "paymentId",
  hold_status AS "holdStatus"`;

/** The shipment's columns with what it expects to be paid, as the reconcile reads it (findClaimAndLockShipment). */
export const EXPECTING_COLUMNS = `${COLUMNS}, expected_amount::text AS "expectedAmount",
  expected_currency AS "expectedCurrency"`;

/** A shipment read with EXPECTING_COLUMNS. */
export type ShipmentExpectingRow = Shipment & {
  expectedAmount: string | null;
  expectedCurrency: string | null;
};

/** A shipment locked for a reconcile, with what it expects to be paid. */
export type LockedShipment = Shipment & { expected: PaymentExpectation };

/** A shipment to add, with what it expects to be paid (minor units, ISO 4217), if it names that. */
export type NewShipment = { shipmentId: string; expectedAmount?: number; expectedCurrency?: string };

/**
 * Adds shipments with payment status `pending`; existing ones are left as they are, except that one
 * given an expected amount and currency takes them (a shipment loaded before its price was known).
 */
export async function addShipments(
  db: Queryable,
  shipments: readonly (string | NewShipment)[],
): Promise<{ added: number }> {
  const rows = shipments.map((item) => (typeof item === 'string' ? { shipmentId: item } : item));
  const { rows: written } = await db.query<{ inserted: boolean }>(
    `INSERT INTO shipments (shipment_id, expected_amount, expected_currency)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
     ON CONFLICT (shipment_id) DO UPDATE
        SET expected_amount = EXCLUDED.expected_amount, expected_currency = EXCLUDED.expected_currency,
            updated_at = now()
      WHERE EXCLUDED.expected_amount IS NOT NULL
        AND (shipments.expected_amount, shipments.expected_currency)
            IS DISTINCT FROM (EXCLUDED.expected_amount, EXCLUDED.expected_currency)
     RETURNING (xmax = 0) AS inserted`,
    [
      rows.map((row) => row.shipmentId),
      rows.map((row) => row.expectedAmount ?? null),
      rows.map((row) => row.expectedCurrency ?? null),
    ],
  );
  return { added: written.filter((row) => row.inserted).length };
}

export async function findShipment(db: Queryable, shipmentId: string): Promise<Shipment | undefined> {
  const { rows } = await db.query<Shipment>(`SELECT ${COLUMNS} FROM shipments WHERE shipment_id = $1::text`, [
    shipmentId,
  ]);
  return rows[0];
}

/** A row read with EXPECTING_COLUMNS, its expectation as numbers. */
export function lockedShipment(row: ShipmentExpectingRow): LockedShipment {
  const { expectedAmount, expectedCurrency, ...shipment } = row;
  return {
    ...shipment,
    expected: {
      amount: expectedAmount === null ? null : Number(expectedAmount),
      currency: expectedCurrency,
    },
  };
}

/** $1 the shipment, $2 its new payment status, $3 the payment, $4 the event that set it. */
export const SET_PAYMENT_STATUS = `UPDATE shipments
              SET payment_status = $2::text, payment_id = COALESCE(payment_id, $3::text),
                  status_event_id = $4::text, updated_at = now()
            WHERE shipment_id = $1::text`;

/** The carrier's hold as settle last saw it succeed: released by the release call, held again by its compensation. */
export async function setHoldStatus(
  db: Queryable,
  shipmentId: string,
  holdStatus: Shipment['holdStatus'],
): Promise<void> {
  await db.query(
    `UPDATE shipments SET hold_status = $2::text, updated_at = now() WHERE shipment_id = $1::text`,
    [shipmentId, holdStatus],
  );
}
