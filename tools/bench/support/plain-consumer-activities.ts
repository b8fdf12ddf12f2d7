import type pg from 'pg';
import { createHttpClient } from '../../../src/lib/http';
import { signWebhook } from '../../../src/lib/webhook-signature';

/** The fields of a payment event T3W's consumer reads (the load generator's events, as P gets them). */
export type PlainConsumerEvent = {
  id: string;
  type: string;
  data: { shipment_id: string; payment_id: string; amount: number; currency: string };
};

/** Its own claim and ledger tables beside settle's, in the same database; the shipments are settle's. */
export const PLAIN_CONSUMER_SCHEMA = `
  CREATE TABLE IF NOT EXISTS bench_plain_claims (
    event_id text PRIMARY KEY, claimed_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_plain_ledger (
    event_id text PRIMARY KEY, shipment_id text NOT NULL, amount bigint NOT NULL, currency text NOT NULL)`;

/**
 * T3W's three steps, written as a careful team would without settle: one transaction that claims the
 * event (its ID as the key) and applies it, then one signed POST per downstream, each with its own
 * Idempotency-Key (the keys settle's outbox uses, so the receiver counts both alike), through the same
 * kept-alive HTTP client as settle's.
 */
export function plainConsumerActivities(options: {
  pool: pg.Pool;
  carrierUrl: string;
  erpUrl: string;
  secret: string;
}) {
  const http = createHttpClient();
  const post = async (url: string, key: string, payload: unknown) => {
    const body = JSON.stringify(payload);
    const response = await http.post(url, {
      headers: {
        'content-type': 'application/json',
        'idempotency-key': key,
        ...signWebhook(options.secret, key, body),
      },
      body,
      timeoutMs: 10_000,
      allowPrivateTargets: true,
    });
    if (response.status < 200 || response.status >= 300)
      throw new Error(`${url} answered ${response.status}`);
  };
  return {
    /** True when this run claimed the event (and applied it); false for an event claimed before. */
    async claimAndApply(event: PlainConsumerEvent): Promise<boolean> {
      const client = await options.pool.connect();
      try {
        await client.query('BEGIN');
        const claimed = await client.query(
          'INSERT INTO bench_plain_claims (event_id) VALUES ($1) ON CONFLICT DO NOTHING',
          [event.id],
        );
        if (claimed.rowCount === 0) {
          await client.query('ROLLBACK');
          return false;
        }
        await client.query(
          `UPDATE shipments SET payment_status = 'captured', payment_id = $2, status_event_id = $3,
             updated_at = now() WHERE shipment_id = $1`,
          [event.data.shipment_id, event.data.payment_id, event.id],
        );
        await client.query(
          'INSERT INTO bench_plain_ledger (event_id, shipment_id, amount, currency) VALUES ($1, $2, $3, $4)',
          [event.id, event.data.shipment_id, event.data.amount, event.data.currency],
        );
        await client.query('COMMIT');
        return true;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async releaseShipment(event: PlainConsumerEvent): Promise<void> {
      await post(options.carrierUrl, `${event.id}:carrier:release_shipment`, {
        shipment_id: event.data.shipment_id,
        event_id: event.id,
      });
    },
    async postLedgerEntry(event: PlainConsumerEvent): Promise<void> {
      await post(options.erpUrl, `${event.id}:erp:post_ledger_entry`, {
        event_id: event.id,
        shipment_id: event.data.shipment_id,
        amount: event.data.amount,
        currency: event.data.currency,
      });
    },
  };
}

export type PlainConsumerActivities = ReturnType<typeof plainConsumerActivities>;
