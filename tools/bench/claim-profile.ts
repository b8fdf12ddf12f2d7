/**
 * `tsx tools/bench/claim-profile.ts [--only=B0,B0N,B1] [--events=2000] [--reps=3] [--statements]`: B0 and B1
 * alone, against a scratch embedded PostgreSQL and nothing else (no Temporal, gateway or worker), to
 * profile them: run it with `node --cpu-prof --import tsx`. Prints throughput and the CPU each
 * transaction costs in Node and in PostgreSQL. B0N is B0 with every parameterised statement sent as a
 * named (server-side prepared) statement, as settle's reconcile path does: not part of `npm run bench`,
 * where B0 stays the plain hand-rolled loop. `--statements` counts the statements each transaction sends.
 * Both wrap `pg.Client.prototype.query`.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { freePort } from '../../testkit/free-port';
import { startEmbeddedPostgres } from '../../src/stack/embedded-postgres';
import { benchBareClaimLoop, benchReconcileActivity } from './claim-loop';
import { round, sleep } from '../../testkit/processes';

const flag = (name: string) =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = (flag('only') ?? 'B0,B1').split(',');
const events = Number(flag('events') ?? 2_000);
const reps = Number(flag('reps') ?? 3);
const countStatements = process.argv.includes('--statements');

/** Statement texts (first words, whitespace folded) and how often each was sent. */
const sent = new Map<string, number>();
/** While true, `query(text, values)` is sent as a named statement (B0N). */
let nameStatements = false;
const query = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const [first, values] = args;
  const text = typeof first === 'string' ? first : ((first as { text?: string }).text ?? '?');
  if (countStatements) {
    const key = text.replace(/\s+/g, ' ').slice(0, 60);
    sent.set(key, (sent.get(key) ?? 0) + 1);
  }
  if (nameStatements && typeof first === 'string' && Array.isArray(values)) {
    const name = `b0n_${createHash('sha1').update(first).digest('hex')}`;
    return query.apply(this, [{ name, text: first, values }, ...args.slice(2)]);
  }
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'settle-claim-profile-'));
  const dataDir = join(scratch, 'pg');
  const postgres = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  const databaseUrl = postgres.urlFor('settle');
  try {
    await postgres.createDatabase('settle');
    const pool = createPool(databaseUrl, { max: 5 });
    const stack = { pool, databaseUrl };
    await migrate(pool);
    const variants = {
      B0: (count: number) => benchBareClaimLoop(stack, count),
      B0N: async (count: number) => {
        nameStatements = true;
        try {
          return await benchBareClaimLoop(stack, count);
        } finally {
          nameStatements = false;
        }
      },
      B1: (count: number) => benchReconcileActivity(stack, count),
    };
    const wanted = only.filter((id): id is keyof typeof variants => id in variants);
    for (const id of wanted) await variants[id](100);
    sent.clear();
    for (let rep = 0; rep < reps; rep += 1) {
      for (const id of wanted) {
        const before = new Map(sent);
        const cpu = process.cpuUsage();
        const pgCpu = postgresCpuMs(dataDir);
        const { eventsPerSecond } = await variants[id](events);
        const { user, system } = process.cpuUsage(cpu);
        await sleep(300); // the pool's backends exit, and the postmaster collects their CPU time
        const pgUs = ((postgresCpuMs(dataDir) - pgCpu) * 1000) / events;
        const perTx = [...sent].map(([text, n]) => [text, (n - (before.get(text) ?? 0)) / events] as const);
        log(
          `${id}: ${round(eventsPerSecond, 1)} tx/s, CPU per tx: Node ${round((user + system) / events, 0)} µs ` +
            `(user ${round(user / events, 0)}), PostgreSQL ${round(pgUs, 0)} µs; load ${loadavg()[0]!.toFixed(2)}`,
        );
        if (countStatements) {
          const relevant = perTx.filter(([, n]) => n >= 0.5);
          log(
            `   ${round(
              relevant.reduce((sum, [, n]) => sum + n, 0),
              2,
            )} statements per transaction:`,
          );
          for (const [text, n] of relevant) log(`     ${round(n, 2)} × ${text}`);
        }
      }
    }
    await pool.end();
    // pg-pool's end() resolves before its clients' sockets close; B0's and B1's pools have no
    // 'error' listener, so give them a moment before the server goes.
    await sleep(500);
  } finally {
    await postgres.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * CPU time of the whole PostgreSQL server so far: the postmaster, its live children, and (through the
 * postmaster's cutime/cstime) the backends that already exited.
 */
function postgresCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const ticks = (pid: number, withChildren: boolean) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // Fields after "(comm) ": state is [0], so utime (14th) is [11]; stime, cutime, cstime follow.
    const own = Number(fields[11]) + Number(fields[12]);
    return withChildren ? own + Number(fields[13]) + Number(fields[14]) : own;
  };
  let total = ticks(postmaster, true);
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      if (Number(fields[1]) === postmaster) total += ticks(Number(pid), false);
    } catch {
      // The process exited meanwhile.
    }
  }
  return (total * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

function log(message: string) {
  process.stderr.write(`${message}\n`);
}

main().catch((error) => {
  process.stderr.write(
    `claim-profile failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
