/**
 * A transaction opened holding an event ID's lock (withTransaction's `lockEventId`: BEGIN and the lock
 * in one simple query, the ID as an escaped literal) holds the very lock lockEventId takes, whatever
 * the ID's characters: another transaction cannot take it until the first ends, and the reconcile of an
 * event with such an ID applies it once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { reconcilePayment } from '../src/activities/reconcile-payment';
import { insertAdmittedEvent } from '../src/db/events';
import { addShipments } from '../src/db/shipments';
import { withTransaction } from '../src/db/transaction';
import { paymentWorkflowId } from '../src/domain/ids';
import { payloadSha256 } from '../src/lib/hash';
import { paymentEvent, uniqueId } from '../testkit/harness';
import { useTestDatabase } from '../testkit/hooks';

const db = useTestDatabase();

/** IDs a provider may send that a query text must carry with care. */
const AWKWARD_IDS = [
  `evt_'quoted'_${uniqueId()}`,
  `evt_back\\slash\\'_${uniqueId()}`,
  `evt_$1::text; SELECT 1 --_${uniqueId()}`,
  `evt_ünïcødé_✓_${uniqueId()}`,
  `evt_E'\\x41'_${uniqueId()}`,
];

/** Whether another connection can take lockEventId's lock on `eventId` now (it lets it go at once). */
async function lockIsFree(eventId: string): Promise<boolean> {
  return withTransaction(db.pool, async (tx) => {
    const { rows } = await tx.query<{ taken: boolean }>(
      'SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, 0)) AS taken',
      [eventId],
    );
    return rows[0]!.taken;
  });
}

describe('the event lock a transaction opens with', () => {
  for (const eventId of AWKWARD_IDS) {
    test(`is lockEventId's lock for ${JSON.stringify(eventId.slice(0, 22))}…`, async () => {
      assert.equal(await lockIsFree(eventId), true);
      const held = await withTransaction(db.pool, async () => lockIsFree(eventId), { lockEventId: eventId });
      assert.equal(held, false, 'another transaction took the lock while it was held');
      assert.equal(await lockIsFree(eventId), true, 'the lock outlived its transaction');
    });
  }

  test('an ID no query text can carry (a NUL byte) is refused by PostgreSQL as a value, as before', async () => {
    await assert.rejects(
      withTransaction(db.pool, async () => 'opened', { lockEventId: `evt_nul\0_${uniqueId()}` }),
      (error: { code?: string }) => error.code === '22021',
    );
  });

  test('an event with such an ID is stored once and applied once', async () => {
    for (const id of AWKWARD_IDS) {
      const shipmentId = `SHP_${uniqueId()}`;
      await addShipments(db.pool, [shipmentId]);
      const event = { ...paymentEvent({ shipmentId, type: 'payment.captured' }), id };
      const admitted = () =>
        withTransaction(
          db.pool,
          async (tx) =>
            (
              await insertAdmittedEvent(tx, {
                eventId: id,
                type: event.type,
                payload: event,
                payloadSha256: payloadSha256(event),
                workflowId: paymentWorkflowId(id),
                source: 'webhook',
              })
            ).inserted,
          { lockEventId: id },
        );
      assert.deepEqual(await Promise.all([admitted(), admitted()]).then((both) => both.sort()), [
        false,
        true,
      ]);
      const [first, second] = await Promise.all([
        reconcilePayment(db.pool, event),
        reconcilePayment(db.pool, event),
      ]);
      assert.deepEqual([first.claimExisted, second.claimExisted].sort(), [false, true]);
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = $1::text',
        [id],
      );
      assert.equal(rows[0]!.n, 1, 'one capture entry');
    }
  });
});
