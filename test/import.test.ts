import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import type { ImportSummary } from '../src/app/import';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from './support/harness';
import { finished, runSettle, spawnSettle, stackEnv } from './support/settle-cli';

let stack: TestStack;
let dir: string;
before(async () => {
  stack = await startTestStack();
  dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
});
after(async () => {
  await stack.close();
});

/**
 * Makes each INSERT of an event `<run>_<n>` with n ≥ `from` wait for an advisory lock held here,
 * until `open()` releases it and removes the trigger.
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
      await stack.pool.query('DROP TRIGGER test_import_gate ON events; DROP FUNCTION test_import_gate();');
    },
  };
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(sql, params);
  return rows[0]!.n;
}

describe('settle import', () => {
  test('a 2,000-event report interrupted half-way and rerun applies every event exactly once', async () => {
    const run = uniqueId('nightly');
    const events = Array.from({ length: 2000 }, (_, i) =>
      paymentEvent({ id: `${run}_${i}`, shipmentId: `SHP-${run}-${i}`, paymentId: `pi_${run}_${i}` }),
    );
    await addShipments(
      stack.pool,
      events.map((event) => event.data.shipment_id),
    );
    const file = join(dir, 'report.jsonl');
    writeFileSync(file, `${events.map((event) => JSON.stringify(event)).join('\n')}\n`);
    const env = stackEnv(stack);
    // Lines from the 1,000th on wait at their INSERT for a lock this test holds, so the interruption
    // lands half-way however fast the machine is.
    const gate = await holdImportGate(run, 1000);

    const first = spawnSettle(['import', file, '--json', '--concurrency', '4'], env);
    const firstDone = finished(first);
    try {
      await waitFor(
        'half of the report to be imported',
        async () => (await count(`SELECT count(*)::int AS n FROM events WHERE source = 'import'`)) >= 1000,
        120_000,
      );
      first.kill('SIGINT');
    } finally {
      await gate.open();
    }
    const interrupted = await firstDone;
    assert.equal(interrupted.code, 130, interrupted.stderr);
    const partial = JSON.parse(interrupted.stdout) as ImportSummary;
    assert.equal(partial.interrupted, true);
    assert.equal(partial.lines, 2000);
    // The 1,000 before the gate, and at most the 4 lines that were waiting at it.
    assert.ok(
      partial.counts.accepted >= 1000 && partial.counts.accepted <= 1004,
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
    assert.equal(rest.processed, 2000);
    assert.equal(rest.counts.duplicate, partial.counts.accepted);
    assert.equal(rest.counts.accepted, 2000 - partial.counts.accepted);
    assert.deepEqual(rest.rejected, []);
    // stderr is a pipe here, as under cron or CI: plain progress lines, the last one the totals.
    const progress = rerun.stderr.split('\n').filter((line) => line.startsWith('import: '));
    assert.ok(progress.length >= 2, rerun.stderr);
    assert.match(
      progress.at(-1)!,
      new RegExp(
        `^import: 2000/2000 lines \\(100%\\) \\d+/s accepted ${rest.counts.accepted} duplicate ${rest.counts.duplicate} ignored 0 rejected 0 elapsed \\d+s$`,
      ),
    );

    const ids = events.map((event) => event.id);
    await waitFor(
      'every imported event to be reconciled',
      async () =>
        (await count(`SELECT count(*)::int AS n FROM claims WHERE event_id = ANY($1::text[])`, [ids])) ===
        2000,
      170_000,
    );
    assert.equal(
      await count(
        `SELECT count(*)::int AS n FROM claims WHERE event_id = ANY($1::text[]) AND outcome = 'applied'`,
        [ids],
      ),
      2000,
    );
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[])`, [ids]),
      2000,
    );
    assert.equal(
      await count(
        `SELECT count(DISTINCT event_id)::int AS n FROM ledger_entries WHERE event_id = ANY($1::text[])`,
        [ids],
      ),
      2000,
    );
    assert.equal(
      await count(
        `SELECT count(*)::int AS n FROM shipments WHERE shipment_id LIKE $1::text AND payment_status = 'settled'`,
        [`SHP-${run}-%`],
      ),
      2000,
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
