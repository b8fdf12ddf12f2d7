/**
 * Retention by partition (migration 017, src/db/partitions.ts): the purge drops the week partitions
 * wholly past the cutoff, keeps what must outlive them (open exceptions, the events they need,
 * events never claimed) in the DEFAULT partitions, and creates the weeks ahead; a row whose week has
 * no partition still goes in (the DEFAULT partition) and moves to its week when the week is created.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensurePartitions, WEEKS_AHEAD } from '../src/db/partitions';
import { purgeExpiredClaims } from '../src/db/purge';
import { uniqueId, waitFor } from '../testkit/harness';
import { useTestDatabase } from '../testkit/hooks';

const DAY_MS = 24 * 3_600_000;
const RETENTION_MS = 90 * DAY_MS;

const db = useTestDatabase();

type Row = { id: string; days: number; claim: 'applied' | 'unmatched' | 'needs_review' | null };

/** An event received `days` ago and, unless `claim` is null, claimed the same moment. */
async function store(row: Row): Promise<void> {
  await db.pool.query(
    `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, received_at)
     VALUES ($1::text, 'payment.settled', '{}'::jsonb, 'h', 'payment:' || $1::text,
             now() - ($2::float8 * interval '1 day'))`,
    [row.id, row.days],
  );
  if (row.claim === null) return;
  await db.pool.query(
    `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at)
     VALUES ($1::text, 'h', $3::text, 'SHP-1', now() - ($2::float8 * interval '1 day'))`,
    [row.id, row.days, row.claim],
  );
}

/** The partition holding the ID's row in `table`, or undefined when there is none. */
async function partitionOf(table: 'claims' | 'events', id: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ partition: string }>(
    `SELECT tableoid::regclass::text AS partition FROM ${table} WHERE event_id = $1::text`,
    [id],
  );
  return rows[0]?.partition;
}

async function exists(name: string): Promise<boolean> {
  const { rows } = await db.pool.query(`SELECT 1 FROM pg_class WHERE relname = $1::text`, [name]);
  return rows.length === 1;
}

/**
 * Creates the partitions of the week `daysAgo` days back and stores an applied event in it, a day
 * after its start; returns the week's start.
 */
async function pastWeekWithClaim(daysAgo: number, prefix: string): Promise<Date> {
  const start = weekStart(new Date(Date.now() - daysAgo * DAY_MS));
  await ensurePartitions(db.pool, { from: start, weeks: 0 });
  await store({ id: uniqueId(prefix), days: (Date.now() - start.getTime()) / DAY_MS - 1, claim: 'applied' });
  return start;
}

/** The Monday 00:00 UTC that starts the week of `time`. */
function weekStart(time: Date): Date {
  const day = new Date(Date.UTC(time.getUTCFullYear(), time.getUTCMonth(), time.getUTCDate()));
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
}

const weekName = (table: string, start: Date) =>
  `${table}_w${start.toISOString().slice(0, 10).replaceAll('-', '')}`;

describe('the purge by partition', () => {
  test('drops every week wholly past the retention, keeps the rest, and moves open exceptions and unclaimed events aside', async () => {
    // Twenty weeks of partitions, as a store in use for five months has them.
    await ensurePartitions(db.pool, { from: new Date(Date.now() - 140 * DAY_MS), weeks: 20 });
    const rows: Row[] = [130, 120, 100, 93, 91, 89, 60, 1].map((days) => ({
      id: uniqueId(`d${days}`),
      days,
      claim: 'applied',
    }));
    const unmatched: Row = { id: uniqueId('unmatched'), days: 130, claim: 'unmatched' };
    const review: Row = { id: uniqueId('review'), days: 120, claim: 'needs_review' };
    const unclaimed: Row = { id: uniqueId('unclaimed'), days: 125, claim: null };
    for (const row of [...rows, unmatched, review, unclaimed]) await store(row);
    // Received in a week that goes, claimed (applied) in one that stays: the event is covered, it goes.
    const late = uniqueId('late');
    await store({ id: late, days: 98, claim: null });
    await db.pool.query(
      `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at)
       VALUES ($1::text, 'h', 'applied', 'SHP-1', now() - interval '80 days')`,
      [late],
    );

    const now = Date.now();
    const cutoff = now - RETENTION_MS;
    // A week goes when its end is at or before the cutoff; the week straddling it stays whole.
    const dropped = (row: Row) =>
      weekStart(new Date(now - row.days * DAY_MS)).getTime() + 7 * DAY_MS <= cutoff;
    const gone = rows.filter(dropped);
    const staying = rows.filter((row) => !dropped(row));
    assert.ok(gone.length >= 3 && staying.length >= 3, `${gone.length} rows in dropped weeks`);

    const dry = await purgeExpiredClaims(db.pool, RETENTION_MS, { dryRun: true });
    const purged = await purgeExpiredClaims(db.pool, RETENTION_MS);
    assert.deepEqual(
      { claims: purged.claims, events: purged.events, kept: purged.keptExceptions },
      { claims: gone.length, events: gone.length + 1, kept: 2 },
    );
    assert.deepEqual(
      { claims: dry.claims, events: dry.events },
      { claims: purged.claims, events: purged.events },
    );

    for (const row of gone) {
      assert.equal(await partitionOf('claims', row.id), undefined, `claim ${row.days} days old`);
      assert.equal(await partitionOf('events', row.id), undefined, `event ${row.days} days old`);
      // Its week is gone whole: dropped, not emptied.
      const start = weekStart(new Date(now - row.days * DAY_MS));
      assert.equal(await exists(weekName('claims', start)), false);
      assert.equal(await exists(weekName('events', start)), false);
    }
    for (const row of staying) {
      const start = weekStart(new Date(now - row.days * DAY_MS));
      assert.equal(
        await partitionOf('claims', row.id),
        weekName('claims', start),
        `claim ${row.days} days old`,
      );
      assert.equal(
        await partitionOf('events', row.id),
        weekName('events', start),
        `event ${row.days} days old`,
      );
    }
    // Open exceptions and an event never claimed outlive their week, in the DEFAULT partitions.
    for (const row of [unmatched, review]) {
      assert.equal(await partitionOf('claims', row.id), 'claims_default');
      assert.equal(await partitionOf('events', row.id), 'events_default');
    }
    assert.equal(await partitionOf('events', unclaimed.id), 'events_default');
    assert.equal(await partitionOf('events', late), undefined);
    assert.equal(
      await partitionOf('claims', late),
      weekName('claims', weekStart(new Date(now - 80 * DAY_MS))),
    );

    // Resolved, the exception goes with the next purge, from the DEFAULT partition, row by row.
    await db.pool.query(`UPDATE claims SET outcome = 'applied' WHERE event_id = $1::text`, [unmatched.id]);
    const next = await purgeExpiredClaims(db.pool, RETENTION_MS);
    assert.deepEqual(
      { claims: next.claims, events: next.events, kept: next.keptExceptions },
      { claims: 1, events: 1, kept: 1 },
    );
    assert.equal(await partitionOf('claims', unmatched.id), undefined);
    assert.equal(await partitionOf('events', unmatched.id), undefined);
    assert.equal(await partitionOf('claims', review.id), 'claims_default');
  });

  test('creates this week and the next ones, so an insert finds its week', async () => {
    await purgeExpiredClaims(db.pool, RETENTION_MS);
    const start = weekStart(new Date());
    for (let week = 0; week <= WEEKS_AHEAD; week += 1) {
      for (const table of ['claims', 'events']) {
        assert.equal(await exists(weekName(table, new Date(start.getTime() + week * 7 * DAY_MS))), true);
      }
    }
    const row: Row = { id: uniqueId('now'), days: 0, claim: 'applied' };
    await store(row);
    assert.equal(await partitionOf('claims', row.id), weekName('claims', start));
  });

  test('a row whose week has no partition goes to the DEFAULT partition, and into its week once created', async () => {
    const later = new Date(Date.now() + 70 * DAY_MS); // Beyond the weeks created ahead.
    const row: Row = { id: uniqueId('later'), days: -70, claim: 'applied' };
    await store(row);
    assert.equal(await partitionOf('claims', row.id), 'claims_default');
    assert.equal(await partitionOf('events', row.id), 'events_default');
    assert.equal(await ensurePartitions(db.pool, { from: later, weeks: 0 }), 2);
    assert.equal(await partitionOf('claims', row.id), weekName('claims', weekStart(later)));
    assert.equal(await partitionOf('events', row.id), weekName('events', weekStart(later)));
  });

  test('creates a week without holding up the live path while an open transaction reads every partition', async () => {
    const later = new Date(Date.now() + 84 * DAY_MS); // Beyond the weeks created ahead, and the week above.
    const week = weekName('events', weekStart(later));
    // An admission waiting for its workflow's start holds what its lookup read: every partition of
    // events, the DEFAULT one too, whose ACCESS EXCLUSIVE lock attaching a week needs.
    const admission = await db.pool.connect();
    const lookup = await db.pool.connect();
    let creating: ReturnType<typeof ensurePartitions> | undefined;
    try {
      await admission.query('BEGIN');
      await admission.query(`SELECT 1 FROM events WHERE event_id = $1::text`, [uniqueId('held')]);
      creating = ensurePartitions(db.pool, { from: later, weeks: 0 });
      await waitFor(
        'the creation to ask for the lock on events_default',
        async () => {
          const { rows } = await db.pool.query(
            `SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'events_default'::regclass`,
          );
          return rows.length > 0;
        },
        60_000,
      );
      // Asking for it queues every later reader of events behind the request: the creation gives way
      // to them within its lock timeout rather than holding them for as long as the admission lasts.
      await lookup.query(`SET statement_timeout = '30s'`);
      const live = uniqueId('live');
      const found = await lookup.query(`SELECT 1 FROM events WHERE event_id = $1::text`, [live]);
      assert.equal(found.rows.length, 0);
      await lookup.query(
        `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id)
         VALUES ($1::text, 'payment.settled', '{}'::jsonb, 'h', 'payment:' || $1::text)`,
        [live],
      );
      assert.equal(await exists(week), false, 'the week waits for the admission');
      await admission.query('COMMIT');
      assert.equal(await creating, 2);
      assert.equal(await exists(week), true);
      assert.equal(await exists(weekName('claims', weekStart(later))), true);
    } finally {
      await admission.query('ROLLBACK').catch(() => {});
      admission.release();
      lookup.release();
      await creating?.catch(() => {});
    }
  });

  test('a purge stopped between its DETACH and its DROP is finished by the next one', async () => {
    const start = await pastWeekWithClaim(150, 'half');
    await db.pool.query(`ALTER TABLE claims DETACH PARTITION ${weekName('claims', start)}`);
    await db.pool.query(`ALTER TABLE events DETACH PARTITION ${weekName('events', start)}`);
    const purged = await purgeExpiredClaims(db.pool, RETENTION_MS);
    assert.deepEqual({ claims: purged.claims, events: purged.events }, { claims: 1, events: 1 });
    assert.equal(await exists(weekName('claims', start)), false);
    assert.equal(await exists(weekName('events', start)), false);
  });

  test('waits for what works on a week (an autovacuum) without holding up the live path, then drops it', async () => {
    const start = await pastWeekWithClaim(160, 'vacuumed');
    const live: Row = { id: uniqueId('live'), days: 0, claim: 'applied' };
    await store(live);
    const week = weekName('claims', start);
    // An autovacuum of the week holds this lock while it works; a session stands in for it.
    const vacuum = await db.pool.connect();
    const lookup = await db.pool.connect();
    let purging: ReturnType<typeof purgeExpiredClaims> | undefined;
    try {
      await vacuum.query('BEGIN');
      await vacuum.query(`LOCK TABLE ${week} IN SHARE UPDATE EXCLUSIVE MODE`);
      purging = purgeExpiredClaims(db.pool, RETENTION_MS);
      const waiting = await waitFor(
        `the purge to wait for the lock on ${week}`,
        async () => {
          const { rows } = await db.pool.query<{ pid: number }>(
            `SELECT pid FROM pg_locks WHERE NOT granted AND relation = $1::regclass`,
            [week],
          );
          return rows[0]?.pid;
        },
        60_000,
      );
      // While it waits, it holds no lock on the parents and asks for none, so the live path's
      // lookups and inserts (which read every partition) go through.
      const { rows: parentLocks } = await db.pool.query<{ relation: string; mode: string; granted: boolean }>(
        `SELECT relation::regclass::text AS relation, mode, granted FROM pg_locks
          WHERE pid = $1::int AND relation IN ('claims'::regclass, 'events'::regclass)`,
        [waiting],
      );
      assert.deepEqual(parentLocks, []);
      await lookup.query(`SET statement_timeout = '30s'`);
      const found = await lookup.query(`SELECT outcome FROM claims WHERE event_id = $1::text`, [live.id]);
      assert.equal(found.rows[0]?.outcome, 'applied');
      await lookup.query(
        `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id) VALUES ($1::text, 'h', 'applied', 'SHP-1')`,
        [uniqueId('during')],
      );
      await vacuum.query('COMMIT');
      const purged = await purging;
      assert.equal(purged.claims, 1);
      assert.equal(await exists(week), false);
      assert.ok(await partitionOf('claims', live.id), 'the live claim is still there');
    } finally {
      await vacuum.query('ROLLBACK').catch(() => {});
      vacuum.release();
      lookup.release();
      await purging?.catch(() => {});
    }
  });
});
