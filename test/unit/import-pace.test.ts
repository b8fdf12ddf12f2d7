/**
 * How `settle import` paces itself (src/app/import-pace.ts) by the limited targets: runs start no
 * faster than the tightest target takes calls, a line that starts no run gives its turn back, and a
 * target whose calls are already scheduled well ahead holds the import. PostgreSQL is a stub that
 * answers the pace's two reads. A wait is told from none by a signal that aborts after a second,
 * well inside the two seconds a turn lasts here.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type pg from 'pg';
import { ImportPace } from '../../src/app/import-pace';

/** One call every 2.1 s at the gate (0.5 a second, less its 5 % margin). */
const SLOW = { erpRateLimit: 0.5 };

/** A pool whose targets' calls are scheduled `aheadMs` from now, and which has no claims. */
function pool(aheadMs = 0): pg.Pool {
  return {
    query: async (query: { name?: string }) =>
      query.name === 'import.scheduled_ahead' ? { rows: [{ ms: aheadMs }] } : { rows: [] },
  } as unknown as pg.Pool;
}

/** Whether `admitOne` waited: it returns early only when the signal aborts, a second from now. */
async function waited(pace: ImportPace): Promise<boolean> {
  const signal = AbortSignal.timeout(1_000);
  await pace.admitOne(signal);
  return signal.aborted;
}

describe('settle import paced by its limited targets', () => {
  test('without a rate limit, runs start as the backlog allows', async () => {
    const pace = new ImportPace(pool(), 100, { erpMaxInFlight: 2 });
    for (let i = 0; i < 5; i += 1) {
      assert.equal(await waited(pace), false, `line ${i + 1}`);
      pace.started(`evt_${i}`);
    }
  });

  test("with SETTLE_ERP_RATE_LIMIT, the next run waits for the ERP's next turn", async () => {
    const pace = new ImportPace(pool(), 100, SLOW);
    assert.equal(await waited(pace), false, 'the first line');
    pace.started('evt_1');
    assert.equal(await waited(pace), true, 'the second line, within its turn');
  });

  test('a line that started no run (a duplicate) gives its turn back', async () => {
    const pace = new ImportPace(pool(), 100, SLOW);
    for (let i = 0; i < 5; i += 1) {
      assert.equal(await waited(pace), false, `duplicate line ${i + 1}`);
      pace.notStarted();
    }
  });

  test('a target whose calls are scheduled seconds ahead holds the first run too', async () => {
    const pace = new ImportPace(pool(5_000), 100, SLOW);
    assert.equal(await waited(pace), true);
  });

  test('a full backlog holds the import whatever the targets', async () => {
    const pace = new ImportPace(pool(), 1);
    assert.equal(await waited(pace), false);
    pace.started('evt_1');
    assert.equal(await waited(pace), true, 'the run is not reconciled yet');
  });
});
