import { createHash } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import pg from 'pg';
import { reconcilePayment } from '../../src/activities/reconcile-payment';
import type { ReconcileResult } from '../../src/domain/workflow-contracts';
import { insertAdmittedEvent } from '../../src/db/events';
import { addShipments } from '../../src/db/shipments';
import { paymentWorkflowId } from '../../src/domain/ids';
import { payloadSha256 } from '../../src/lib/hash';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { closedLoop, makeEvent, newRunId, shipmentFor } from '../../testkit/load';
import type { ProofStack } from '../../testkit/stack';
import type { RowRun } from './context';

/** Transactions in flight at once in B0 and B1, and connections in their pools. */
export const CLAIM_LOOP_CONCURRENCY = 10;

/** What B0 and B1 need of the stack: its database. */
export type ClaimLoopStack = Pick<ProofStack, 'pool' | 'databaseUrl'>;

async function freshEvents(stack: ClaimLoopStack, count: number): Promise<PaymentEvent[]> {
  const runId = newRunId('b');
  await addShipments(
    stack.pool,
    Array.from({ length: count }, (_, i) => shipmentFor(runId, i)),
  );
  return Array.from({ length: count }, (_, i) => makeEvent(runId, i));
}

/**
 * Stores the events as settle's door does before a run reconciles them (the reconcile refuses an
 * event settle never stored), before the timed loop: B1 measures the reconcile, admission's own cost
 * is in the rows that go through the gateway.
 */
async function admitted(stack: ClaimLoopStack, events: PaymentEvent[]): Promise<PaymentEvent[]> {
  for (const event of events)
    await insertAdmittedEvent(stack.pool, {
      eventId: event.id,
      type: event.type,
      payload: event,
      payloadSha256: payloadSha256(event),
      workflowId: paymentWorkflowId(event.id),
      source: 'webhook',
    });
  return events;
}

/**
 * B0: the hand-rolled consumer a user would otherwise write: plain `pg`, no Temporal, no settle code,
 * the same claim-and-update transaction (advisory lock, claim check, shipment lock, status update,
 * ledger entry, two outbox rows, claim insert). Returns transactions per second.
 */
export async function benchBareClaimLoop(
  stack: ClaimLoopStack,
  count: number,
): Promise<{ eventsPerSecond: number }> {
  const events = await freshEvents(stack, count);
  const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: CLAIM_LOOP_CONCURRENCY });
  try {
    const ms = await closedLoop(count, CLAIM_LOOP_CONCURRENCY, async (i) => {
      const event = events[i]!;
      const sha = createHash('sha256').update(JSON.stringify(event)).digest('hex');
      const { shipment_id: shipmentId, payment_id: paymentId, amount, currency } = event.data;
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))', [event.id]);
        const claim = await client.query('SELECT outcome FROM claims WHERE event_id = $1::text', [event.id]);
        if (claim.rowCount) throw new Error('B0 events are fresh');
        await client.query(
          'SELECT payment_status, hold_status FROM shipments WHERE shipment_id = $1::text FOR UPDATE',
          [shipmentId],
        );
        await client.query(
          `UPDATE shipments SET payment_status = 'captured', payment_id = COALESCE(payment_id, $2::text),
             status_event_id = $3::text, updated_at = now() WHERE shipment_id = $1::text`,
          [shipmentId, paymentId, event.id],
        );
        const entry = await client.query<{ entry_id: string }>(
          `INSERT INTO ledger_entries (kind, shipment_id, payment_id, event_id, amount, currency)
           VALUES ('capture', $1::text, $2::text, $3::text, $4::bigint, $5::text) RETURNING entry_id`,
          [shipmentId, paymentId, event.id, amount, currency],
        );
        for (const [target, action] of [
          ['carrier', 'release_hold'],
          ['erp', 'post_ledger_entry'],
        ] as const) {
          await client.query(
            `INSERT INTO outbox (event_id, shipment_id, target, action, idempotency_key, body)
             VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb)`,
            [
              event.id,
              shipmentId,
              target,
              action,
              `${event.id}:${target}:${action}`,
              JSON.stringify({
                entry_id: entry.rows[0]!.entry_id,
                shipment_id: shipmentId,
                amount,
                currency,
              }),
            ],
          );
        }
        await client.query(
          `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id) VALUES ($1::text, $2::text, 'applied', $3::text)`,
          [event.id, sha, shipmentId],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    });
    return { eventsPerSecond: count / (ms / 1000) };
  } finally {
    await pool.end();
  }
}

/** B1: settle's reconcile activity itself, called directly (no Temporal), same pool size and load. */
export async function benchReconcileActivity(
  stack: ClaimLoopStack,
  count: number,
): Promise<{ eventsPerSecond: number }> {
  const events = await admitted(stack, await freshEvents(stack, count));
  const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: CLAIM_LOOP_CONCURRENCY });
  // Each as a step of its event's own run (an activity acts only for the run its workflow ID names).
  const envs = events.map(
    (event) =>
      new MockActivityEnvironment({
        attempt: 1,
        workflowExecution: { workflowId: paymentWorkflowId(event.id), runId: 'bench' },
      }),
  );
  try {
    const ms = await closedLoop(count, CLAIM_LOOP_CONCURRENCY, async (i) => {
      const result = (await envs[i]!.run(reconcilePayment, pool, events[i]!)) as ReconcileResult;
      if (result.outcome !== 'applied') throw new Error(`B1 expected applied, got ${result.outcome}`);
    });
    return { eventsPerSecond: count / (ms / 1000) };
  } finally {
    await pool.end();
  }
}

/** B0 and B1, warmed up, then measured in turn so that both meet the same moments of the machine's load. */
export const runClaimLoop: RowRun = async ({ stack, size, row, measureInTurn }) => {
  await benchBareClaimLoop(stack, 100);
  await benchReconcileActivity(stack, 100);
  const n = size.claimEvents;
  await measureInTurn([
    row('B0', `bare claim loop, plain pg, ${CLAIM_LOOP_CONCURRENCY} in flight`, {
      run: () => benchBareClaimLoop(stack, n),
      events: n,
    }),
    row('B1', `reconcile activity called directly, ${CLAIM_LOOP_CONCURRENCY} in flight`, {
      run: () => benchReconcileActivity(stack, n),
      events: n,
    }),
  ]);
};
