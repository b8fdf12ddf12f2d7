/**
 * `npx tsx tools/bench/pg-statements.ts [P|T3W] [--events=N]`: what one event costs PostgreSQL, by
 * statement. Runs the row's path (P: settle's gateway and worker; T3W: the plain consumer,
 * tools/bench/support/plain-consumer.ts) at 50 in flight on its own stack, with pg_stat_statements
 * loaded, and prints per event: round trips, WAL records and bytes, and each statement's calls,
 * execution and planning time. A diagnostic for docs/performance.md, not a figure: the bench's CPU
 * per process is what the goals read.
 */
import { benchFullPath, preparePathEvents, startPlainConsumer, type ClaimsTable } from './full-path';
import type { Child } from '../../testkit/processes';
import { ProofStack } from '../../testkit/stack';

const row = process.argv[2] === 'T3W' ? 'T3W' : 'P';
const events = Number(process.argv.find((arg) => arg.startsWith('--events='))?.slice(9) ?? 600);

type Statement = {
  calls: string;
  exec_ms: number;
  plan_ms: number;
  wal_records: string;
  query: string;
};

async function main() {
  const stack = new ProofStack({
    postgresSettings: {
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track': 'all',
      'pg_stat_statements.track_planning': 'on',
    },
  });
  let plainConsumer: Child | undefined;
  try {
    await stack.start();
    await stack.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    let target = stack;
    let claims: ClaimsTable = 'claims';
    if (row === 'P') {
      await stack.startGateway();
      await stack.startWorker();
    } else {
      const started = await startPlainConsumer(stack);
      plainConsumer = started.child;
      target = started.path;
      claims = started.claims;
    }
    // A warm-up, then only the measured events' statements.
    await benchFullPath(target, await preparePathEvents(stack, 300), 50, claims);
    const prepared = await preparePathEvents(stack, events);
    const wal = async () =>
      (
        await stack.pool.query<{ r: string; b: string }>(
          'SELECT wal_records AS r, wal_bytes AS b FROM pg_stat_wal',
        )
      ).rows[0]!;
    await stack.pool.query('SELECT pg_stat_statements_reset()');
    const before = await wal();
    const figures = await benchFullPath(target, prepared, 50, claims);
    const after = await wal();
    const { rows } = await stack.pool.query<Statement>(
      `SELECT calls, total_exec_time AS exec_ms, total_plan_time AS plan_ms, wal_records,
              left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
         FROM pg_stat_statements
        WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE '%FROM ${claims} WHERE event_id = ANY%'
          AND query NOT LIKE 'INSERT INTO shipments%unnest%'
        ORDER BY total_exec_time + total_plan_time DESC`,
    );
    const perEvent = (value: number | string) => (Number(value) / events).toFixed(2);
    const us = (ms: number) => ((ms * 1000) / events).toFixed(0);
    const total = (key: 'exec_ms' | 'plan_ms') => rows.reduce((sum, r) => sum + Number(r[key]), 0);
    const out = process.stdout;
    out.write(`${row}: ${events} events at 50 in flight, ${figures.eventsPerSecond.toFixed(1)}/s\n`);
    out.write(
      `per event: ${perEvent(rows.reduce((sum, r) => sum + Number(r.calls), 0))} statements (round trips), ` +
        `${perEvent(Number(after.r) - Number(before.r))} WAL records, ${perEvent(Number(after.b) - Number(before.b))} WAL bytes, ` +
        `execution ${us(total('exec_ms'))} µs, planning ${us(total('plan_ms'))} µs\n`,
    );
    out.write('calls/event  exec µs/event  plan µs/event  WAL records/event  statement\n');
    for (const r of rows) {
      out.write(
        `${perEvent(r.calls).padStart(11)}  ${us(r.exec_ms).padStart(13)}  ${us(r.plan_ms).padStart(13)}  ` +
          `${perEvent(r.wal_records).padStart(17)}  ${r.query}\n`,
      );
    }
  } finally {
    await plainConsumer?.stop();
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
