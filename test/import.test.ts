import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import type { ImportSummary } from '../src/app/import';
import { paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import { finished, runSettle, spawnSettle, stackEnv } from './support/settle-cli';

const stack = useTestStack();
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
});

/**
 * Makes each INSERT of an event `<run>_<n>` with n ≥ `from` wait for an advisory lock held here,
 * until `open()` releases it and turns the trigger into a no-op.
 *
 * `open()` replaces the function's body rather than dropping the trigger: DROP TRIGGER needs an
 * ACCESS EXCLUSIVE lock on `events` and its partitions while the import's held lines and the
 * worker's reconciles hold and take locks on them, and that DDL can deadlock with the live path
 * (it did, in CI). Replacing a function locks no table. The no-op trigger goes with the test
 * stack's database.
 */
async function holdImportGate(run: string, from: number): Promise<{ open(): Promise<void> }> {
  const key = 424242;
  const holder = await stack.pool.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [key]);
  const prefix = `${run}_`;
  await stack.pool.query(`
    CREATE FUNCTION test_import_gate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF starts_with(NEW.event_id, '${prefix}')
         AND substr(NEW.event_id, ${prefix.length + 1})::int >= ${from} THEN
        PERFORM pg_advisory_xact_lock_shared(${key});
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_import_gate BEFORE INSERT ON events
      FOR EACH ROW EXECUTE FUNCTION test_import_gate();`);
  return {
    async open() {
      await holder.query('SELECT pg_advisory_unlock($1)', [key]);
      holder.release();
      await stack.pool.query(
        `CREATE OR REPLACE FUNCTION test_import_gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
      );
    },
  };
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(sql, params);
  return rows[0]!.n;
}

/**
 * The interrupted report's size: enough lines that half of them is more than the import's concurrency
 * (so the interruption lands between lines, with lines in flight), few enough that the test measures
 * no throughput. Import volume is the bench's part (`npm run bench`, I: 1,000 lines short, 10,000 full).
 */
const REPORT_LINES = 40;
const HALF = REPORT_LINES / 2;
const CONCURRENCY = 4;

describe('settle import', () => {
  test(`a ${REPORT_LINES}-event report interrupted half-way and rerun applies every event exactly once`, async () => {
    const run = uniqueId('nightly');
    const events = Array.from({ length: REPORT_LINES }, (_, i) =>
      paymentEvent({ id: `${run}_${i}`, shipmentId: `SHP-${run}-${i}`, paymentId: `pi_${run}_${i}` }),
    );
    await addShipments(
      stack.pool,
      events.map((event) => event.data.shipment_id),
    );
    const file = join(dir, 'report.jsonl');
    writeFileSync(file, `${events.map((event) => JSON.stringify(event)).join('\n')}\n`);
    const env = stackEnv(stack);
    // Lines from the half-way one on wait at their INSERT for a lock this test holds, so the
    // interruption lands half-way however fast the machine is.
    const gate = await holdImportGate(run, HALF);

    const first = spawnSettle(['import', file, '--json', '--concurrency', String(CONCURRENCY)], env);
    const firstDone = finished(first);
    try {
      await waitFor(
        `${HALF} of ${REPORT_LINES} lines (the half before the gate) to be imported`,
        () => count(`SELECT count(*)::int AS n FROM events WHERE source = 'import'`),
        { until: (n) => n >= HALF, timeoutMs: 300_000 },
      );
      first.kill('SIGINT');
    } finally {
      await gate.open();
    }
    const interrupted = await firstDone;
    assert.equal(interrupted.code, 130, interrupted.stderr);
    const partial = JSON.parse(interrupted.stdout) as ImportSummary;
    assert.equal(partial.interrupted, true);
    assert.equal(partial.lines, REPORT_LINES);
    // The half before the gate, and at most the lines that were waiting at it (one per slot).
    assert.ok(
      partial.counts.accepted >= HALF && partial.counts.accepted <= HALF + CONCURRENCY,
      `accepted ${partial.counts.accepted}`,
    );
    assert.equal(partial.counts.duplicate + partial.counts.rejected + partial.counts.unavailable, 0);
    // Lines in flight finished before the summary: what it says was accepted is exactly what is stored.
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM events WHERE source = 'import'`),
      partial.counts.accepted,
    );

    const rerun = await runSettle(['import', file, '--json'], env);
    assert.equal(rerun.code, 0, rerun.stderr);
    const rest = JSON.parse(rerun.stdout) as ImportSummary;
    assert.equal(rest.interrupted, false);
    assert.equal(rest.processed, REPORT_LINES);
    assert.equal(rest.counts.duplicate, partial.counts.accepted);
    assert.equal(rest.counts.accepted, REPORT_LINES - partial.counts.accepted);
    assert.deepEqual(rest.rejected, []);
    // stderr is a pipe here, as under cron or CI: plain progress lines, the last one the totals.
    const progress = rerun.stderr.split('\n').filter((line) => line.startsWith('import: '));
    assert.ok(progress.length >= 2, rerun.stderr);
    assert.match(
      progress.at(-1)!,
      new RegExp(
        `^import: ${REPORT_LINES}/${REPORT_LINES} lines \\(100%\\) \\d+/s accepted ${rest.counts.accepted} duplicate ${rest.counts.duplicate} ignored 0 rejected 0 elapsed \\d+s$`,
      ),
    );

    const ids = events.map((event) => event.id);
    await waitFor(
      `all ${REPORT_LINES} imported events to be reconciled (claims)`,
      () => count(`SELECT count(*)::int AS n FROM claims WHERE event_id = ANY($1::text[])`, [ids]),
      { until: (n) => n === REPORT_LINES, timeoutMs: 300_000 },
    );
    assert.equal(
      await count(
        `SELECT count(*)::int AS n FROM claims WHERE event_id = ANY($1::text[]) AND outcome = 'applied'`,
        [ids],
      ),
      REPORT_LINES,
    );
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[])`, [ids]),
      REPORT_LINES,
    );
    assert.equal(
      await count(
        `SELECT count(DISTINCT event_id)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[])`,
        [ids],
      ),
      REPORT_LINES,
    );
    assert.equal(
      await count(
        `SELECT count(*)::int AS n FROM shipments WHERE shipment_id LIKE $1::text AND payment_status = 'settled'`,
        [`SHP-${run}-%`],
      ),
      REPORT_LINES,
    );
  });

  test('the summary names rejected lines by number, and an ID reused with another payload is refused', async () => {
    const shipmentId = uniqueId('SHP');
    await addShipments(stack.pool, [shipmentId]);
    const known = paymentEvent({ shipmentId });
    assert.equal((await postWebhook(stack, known)).status, 202);
    const fresh = paymentEvent({ shipmentId, type: 'payment.authorized' });
    const lines = [
      JSON.stringify(fresh),
      JSON.stringify(known),
      '{not json',
      '',
      JSON.stringify({ ...paymentEvent(), data: { ...paymentEvent().data, amount: -1 } }),
      JSON.stringify({ id: uniqueId('evt'), type: 'charge.created' }),
      JSON.stringify({ ...known, data: { ...known.data, amount: 1 } }),
    ];
    const file = join(dir, 'mixed.jsonl');
    writeFileSync(file, lines.join('\n'));

    const result = await runSettle(['import', file, '--json'], stackEnv(stack));
    assert.equal(result.code, 2, result.stderr);
    const summary = JSON.parse(result.stdout) as ImportSummary;
    assert.deepEqual(summary.counts, { accepted: 1, duplicate: 1, ignored: 1, rejected: 3, unavailable: 0 });
    assert.deepEqual(
      summary.rejected.map((problem) => [problem.line, problem.error]),
      [
        [3, 'invalid_event'],
        [5, 'invalid_event'],
        [7, 'idempotency_key_reused'],
      ],
    );
    assert.match(summary.rejected[1]!.message, /data\.amount/);

    const human = await runSettle(['import', file], stackEnv(stack));
    assert.match(human.stdout, /line 3: invalid_event/);
    assert.match(human.stdout, /duplicate\s+2/);
  });
});
