/**
 * An event ID stays unique for the whole retention although claims and events are partitioned by
 * week (migration 017) and no key spans the weeks: the door and the reconcile look the ID up in
 * every partition under the per-event advisory lock. Here the first claim and event sit in a week
 * partition two weeks back, and redeliveries (one by one, and ten at once) meet them there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { reconcilePayment } from '../src/activities/reconcile-payment';
import type pg from 'pg';
import { insertAdmittedEvent } from '../src/db/events';
import { createPool } from '../src/db/pool';
import { ensurePartitions } from '../src/db/partitions';
import { addShipments } from '../src/db/shipments';
import { withTransaction } from '../src/db/transaction';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentEvent } from '../src/domain/payment-event';
import { payloadSha256 } from '../src/lib/hash';
import { createTestDatabase, paymentEvent, uniqueId } from '../testkit/harness';

const DAY_MS = 24 * 3_600_000;

let db: Awaited<ReturnType<typeof createTestDatabase>>;
before(async () => {
  db = await createTestDatabase();
  // The last four weeks' partitions, as a store in use for a month has them.
  await ensurePartitions(db.pool, { from: new Date(Date.now() - 28 * DAY_MS), weeks: 5 });
});
after(async () => {
  await db.drop();
});

/** Stores the event as the door does; true when this call stored it. */
async function admit(event: PaymentEvent, pool: pg.Pool = db.pool): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const { inserted } = await insertAdmittedEvent(tx, {
      eventId: event.id,
      type: event.type,
      payload: event,
      payloadSha256: payloadSha256(event),
      workflowId: paymentWorkflowId(event.id),
      source: 'webhook',
    });
    return inserted;
  });
}

/** Moves the event's claim and stored event `days` back: into an older week's partition. */
async function age(eventId: string, days: number): Promise<void> {
  await db.pool.query(
    `UPDATE claims SET claimed_at = now() - ($2::int * interval '1 day') WHERE event_id = $1::text`,
    [eventId, days],
  );
  await db.pool.query(
    `UPDATE events SET received_at = now() - ($2::int * interval '1 day') WHERE event_id = $1::text`,
    [eventId, days],
  );
}

/** The partitions that hold rows of the event ID in `table`, one entry per row. */
async function partitionsOf(
  table: 'claims' | 'events' | 'ledger_entries',
  eventId: string,
): Promise<string[]> {
  const { rows } = await db.pool.query<{ partition: string }>(
    `SELECT tableoid::regclass::text AS partition FROM ${table} WHERE event_id = $1::text`,
    [eventId],
  );
  return rows.map((row) => row.partition);
}

/** The week partition a row written now lands in. */
async function thisWeek(table: 'claims' | 'events'): Promise<string> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT $1::text || '_w' || to_char(date_trunc('week', now() AT TIME ZONE 'UTC'), 'YYYYMMDD') AS name`,
    [table],
  );
  return rows[0]!.name;
}

async function claimedTwoWeeksAgo(): Promise<PaymentEvent> {
  const shipmentId = uniqueId('SHP');
  await addShipments(db.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.captured' });
  assert.equal(await admit(event), true);
  const first = await reconcilePayment(db.pool, event);
  assert.deepEqual(
    { outcome: first.outcome, claimExisted: first.claimExisted },
    { outcome: 'applied', claimExisted: false },
  );
  await age(event.id, 14);
  const [claimPartition] = await partitionsOf('claims', event.id);
  const [eventPartition] = await partitionsOf('events', event.id);
  // Not this week's partition (where a new row goes), nor the DEFAULT one: an older week's.
  assert.match(claimPartition!, /^claims_w\d{8}$/);
  assert.notEqual(claimPartition, await thisWeek('claims'));
  assert.match(eventPartition!, /^events_w\d{8}$/);
  assert.notEqual(eventPartition, await thisWeek('events'));
  return event;
}

describe('an event ID claimed in an older week', () => {
  test('is a duplicate at the door and at the reconcile; another payload under it is refused', async () => {
    const event = await claimedTwoWeeksAgo();
    // The week partitions share no key: without the lookup, this week's partition would take the ID.
    // (Inserted and rolled back: the sentinel is the only failure.)
    const rolledBack = new Error('rolled back');
    await assert.rejects(
      withTransaction(db.pool, async (tx) => {
        await tx.query(
          `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id) VALUES ($1::text, 'x', 'applied', 'x')`,
          [event.id],
        );
        throw rolledBack;
      }),
      (error) => error === rolledBack,
    );

    assert.equal(await admit(event), false, 'the redelivery is not stored again');
    const again = await reconcilePayment(db.pool, event);
    assert.deepEqual(
      { outcome: again.outcome, claimExisted: again.claimExisted },
      { outcome: 'applied', claimExisted: true },
    );

    const reused = { ...event, data: { ...event.data, amount: 99_999 } };
    assert.equal(await admit(reused), false, 'another payload under the ID is not stored');
    await assert.rejects(reconcilePayment(db.pool, reused), (error: Error & { type?: string }) => {
      assert.equal(error.type, 'idempotency_key_reused');
      return true;
    });

    assert.equal((await partitionsOf('claims', event.id)).length, 1);
    assert.equal((await partitionsOf('events', event.id)).length, 1);
    assert.equal((await partitionsOf('ledger_entries', event.id)).length, 1, 'captured once');
  });

  test('ten redeliveries at once: none stored, none applied again', async () => {
    const event = await claimedTwoWeeksAgo();
    const stored = await Promise.all(Array.from({ length: 10 }, () => admit(event)));
    assert.deepEqual(stored, Array(10).fill(false));
    const results = await Promise.all(Array.from({ length: 10 }, () => reconcilePayment(db.pool, event)));
    assert.deepEqual(
      results.map((result) => result.claimExisted),
      Array(10).fill(true),
    );
    assert.equal((await partitionsOf('claims', event.id)).length, 1);
    assert.equal((await partitionsOf('ledger_entries', event.id)).length, 1);
  });
});

describe('an event stored in an older week and not yet claimed', () => {
  test('ten deliveries and ten reconciles at once: one stored, one claim, applied once', async () => {
    const shipmentId = uniqueId('SHP');
    await addShipments(db.pool, [shipmentId]);
    const event = paymentEvent({ shipmentId, type: 'payment.captured' });
    assert.equal(await admit(event), true);
    await age(event.id, 14);
    const stored = await Promise.all(Array.from({ length: 10 }, () => admit(event)));
    assert.deepEqual(stored, Array(10).fill(false));

    const results = await Promise.all(Array.from({ length: 10 }, () => reconcilePayment(db.pool, event)));
    assert.equal(results.filter((result) => !result.claimExisted).length, 1, 'one reconcile claimed it');
    // The claim went to this week's partition, the event stays in its older one: still one of each.
    assert.deepEqual(await partitionsOf('claims', event.id), [await thisWeek('claims')]);
    assert.equal((await partitionsOf('events', event.id)).length, 1);
    assert.notEqual((await partitionsOf('events', event.id))[0], await thisWeek('events'));
    assert.equal((await partitionsOf('ledger_entries', event.id)).length, 1);
  });

  test('ten first deliveries of a new ID at once: exactly one stored', async () => {
    const event = paymentEvent({ shipmentId: uniqueId('SHP') });
    const stored = await Promise.all(Array.from({ length: 10 }, () => admit(event)));
    assert.equal(stored.filter(Boolean).length, 1);
    assert.equal((await partitionsOf('events', event.id)).length, 1);
  });
});

describe('a database whose sessions default to SERIALIZABLE', () => {
  test('settle’s pool still runs READ COMMITTED: ten first deliveries at once store one, none fails', async () => {
    const name = new URL(db.url).pathname.slice(1);
    await db.pool.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
    // Options the connection string carries are kept, and cannot undo the pin either.
    const url = new URL(db.url);
    url.searchParams.set(
      'options',
      '-c default_transaction_isolation=repeatable\\ read -c application_name=pinned',
    );
    const pool = createPool(url.toString());
    try {
      const { rows } = await pool.query<{ isolation: string; name: string }>(
        `SELECT current_setting('default_transaction_isolation') AS isolation,
                current_setting('application_name') AS name`,
      );
      assert.deepEqual(rows[0], { isolation: 'read committed', name: 'pinned' });
      const event = paymentEvent({ shipmentId: uniqueId('SHP') });
      const stored = await Promise.all(Array.from({ length: 10 }, () => admit(event, pool)));
      assert.equal(stored.filter(Boolean).length, 1);
      assert.equal((await partitionsOf('events', event.id)).length, 1);
    } finally {
      await pool.end();
      await db.pool.query(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    }
  });
});
