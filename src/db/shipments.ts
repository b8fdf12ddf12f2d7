import type { PaymentStatus } from '../domain/payment-rules';
import type { Queryable } from './pool';

export type Shipment = {
  shipmentId: string;
  paymentStatus: PaymentStatus;
  paymentId: string | null;
  holdStatus: 'held' | 'released';
};

const COLUMNS = `shipment_id AS "shipmentId", payment_status AS "paymentStatus", payment_id AS "paymentId",
  hold_status AS "holdStatus"`;

/** Adds shipments with payment status `pending`; existing ones are left as they are. */
export async function addShipments(db: Queryable, shipmentIds: string[]): Promise<{ added: number }> {
  const { rowCount } = await db.query(
    `INSERT INTO shipments (shipment_id) SELECT unnest($1::text[]) ON CONFLICT (shipment_id) DO NOTHING`,
    [shipmentIds],
  );
  return { added: rowCount ?? 0 };
}

export async function findShipment(db: Queryable, shipmentId: string): Promise<Shipment | undefined> {
  const { rows } = await db.query<Shipment>(`SELECT ${COLUMNS} FROM shipments WHERE shipment_id = $1::text`, [
    shipmentId,
  ]);
  return rows[0];
}

export async function lockShipment(db: Queryable, shipmentId: string): Promise<Shipment | undefined> {
  const { rows } = await db.query<Shipment>({
    name: 'shipments.lock',
    text: `SELECT ${COLUMNS} FROM shipments WHERE shipment_id = $1::text FOR UPDATE`,
    values: [shipmentId],
  });
  return rows[0];
}

export async function setPaymentStatus(
  db: Queryable,
  change: { shipmentId: string; paymentStatus: PaymentStatus; paymentId: string; eventId: string },
): Promise<void> {
  await db.query({
    name: 'shipments.set_payment_status',
    text: `UPDATE shipments
              SET payment_status = $2::text, payment_id = COALESCE(payment_id, $3::text),
                  status_event_id = $4::text, updated_at = now()
            WHERE shipment_id = $1::text`,
    values: [change.shipmentId, change.paymentStatus, change.paymentId, change.eventId],
  });
}

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
