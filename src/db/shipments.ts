import { SHIPMENT_COLUMNS, type Shipment } from './claims';
import type { Queryable } from './pool';

// The shipments settle is told of (`settle shipments`, the simulator, the tests' seeds), and reading
// one. What a payment event does to its shipment (locked, its status, its hold) is claims.ts's.

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
  const { rows } = await db.query<Shipment>(
    `SELECT ${SHIPMENT_COLUMNS} FROM shipments WHERE shipment_id = $1::text`,
    [shipmentId],
  );
  return rows[0];
}
