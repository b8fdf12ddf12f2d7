/**
 * `npm run bench [-- --short] [-- --only=ID,…] [-- --server=dev|cluster|both] [-- --help]`: settle's
 * benchmarks against baselines measured in the same run, on this machine, on loopback. The rows, what
 * each proves, its goals and whether CI runs it are the table in table.ts (`--help` prints it); each
 * row's code is in its own file. Each figure is the median of its repetitions; CPU time per event and
 * peak RSS are per process. Writes journal/bench-results/latest.json (latest-cluster.json for the
 * cluster), then prints a table and the goal lines (a missed goal is a MISS line). Bounded in count and
 * time: it stops by itself.
 *
 * `--server=cluster`: the rows marked `cluster` (unless --only says otherwise) against the real
 * Temporal server of `npm run topology` (testkit/cluster.ts) instead of the dev server;
 * `--server=both`: the dev server's run, then the cluster's, one stack at a time.
 *
 * SETTLE_BENCH_WORKER_CPU_PROF_DIR: Node's --cpu-prof for the workers, the gateway and each serve, one
 * .cpuprofile per thread written there when the process exits. SETTLE_BENCH_WORKER_NODE_OPTIONS (e.g.
 * --max-semi-space-size=4) and SETTLE_BENCH_WORKER_OPTIONS (SDK settings, testkit/worker-options.ts)
 * apply to every worker compared.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { round, spawnTs, type Child } from '../../testkit/processes';
import { ProofStack } from '../../testkit/stack';
import { SIZES, type BenchContext, type Result, type Row } from './context';
import { CPU_CLASSES, cpuByClass, measuring } from './measure';
import { Reading, ROWS, type Goal } from './table';
import { NOOP_TASK_QUEUE } from './temporal-floor';

const args = process.argv.slice(2);
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const short = args.includes('--short');
const size = short ? SIZES.short : SIZES.full;
const only = option('only')?.split(',');
const unknown = only?.filter((id) => !ROWS.some((row) => row.id === id)) ?? [];
if (unknown.length)
  throw new Error(`--only: no row ${unknown.join(', ')} (npm run bench -- --help lists them)`);
const serverArg = option('server') ?? 'dev';
if (!['dev', 'cluster', 'both'].includes(serverArg)) throw new Error('--server must be dev, cluster or both');
const servers = serverArg === 'both' ? (['dev', 'cluster'] as const) : [serverArg as 'dev' | 'cluster'];
let server: 'dev' | 'cluster' = servers[0]!;
let results: Result[] = [];

const wanted = (id: string) => {
  const row = ROWS.find((r) => r.id === id)!;
  return only ? only.includes(id) : !row.byHand && (server === 'dev' || row.cluster === true);
};

/**
 * glibc's malloc arenas, as the Dockerfile sets them for production (`MALLOC_ARENA_MAX=2`): every
 * process this run spawns (gateway, workers, PostgreSQL) inherits it unless the caller set another.
 */
process.env.MALLOC_ARENA_MAX ??= '2';

async function main() {
  if (args.includes('--help')) return printHelp();
  const summaries: string[] = [];
  for (const next of servers) {
    server = next;
    results = [];
    const goals = await benchOn();
    const ratio = (inFlight: number) =>
      goals.find((g) => g.goal === `P ≥ 0.6 × T0 (${inFlight} in flight)`)?.measured;
    summaries.push(`${next}: P/T0 ${ratio(50)} at 50 in flight, ${ratio(10)} at 10`);
  }
  if (servers.length > 1) process.stdout.write(`P/T0 on both servers\n  ${summaries.join('\n  ')}\n`);
}

/** One stack (the dev server or the cluster), the rows wanted on it, its table and results file. */
async function benchOn(): Promise<Goal[]> {
  const startedAt = new Date();
  const load = { before: loadavg().map((v) => round(v, 2)), after: [] as number[] };
  const stack = new ProofStack({ server });
  const profDir = process.env.SETTLE_BENCH_WORKER_CPU_PROF_DIR;
  const profile = (dir?: string) =>
    profDir ? ['--cpu-prof', `--cpu-prof-dir=${dir ? join(profDir, dir) : profDir}`] : [];
  const nodeOptions = process.env.SETTLE_BENCH_WORKER_NODE_OPTIONS;
  const workerEnv: Record<string, string> = nodeOptions ? { NODE_OPTIONS: nodeOptions } : {};
  const processes: Record<string, Child | undefined> = {};
  try {
    const where = server === 'cluster' ? 'cluster (testkit/cluster.ts)' : 'dev server';
    log(
      `starting PostgreSQL, the Temporal ${where}, the gateway and a worker (${short ? 'short' : 'full'} run)`,
    );
    await stack.start();
    await stack.startGateway(profile('gateway'));
    processes.worker = await stack.startWorker(workerEnv, profile());
    processes['noop-worker'] = await spawnTs(
      'noop worker',
      [...profile(), 'tools/bench/support/noop-worker.ts'],
      stack.env({ SETTLE_TASK_QUEUE: NOOP_TASK_QUEUE, ...workerEnv }),
      (output) => output.includes('worker ready'),
    );
    const pids = () => ({
      bench: 'self' as const,
      gateway: stack.gateway?.pid,
      ...Object.fromEntries(Object.entries(processes).map(([name, child]) => [name, child?.pid])),
      ...stack.temporalPids(),
      postgres: stack.postgresPid(),
    });
    const afterTurn: (() => Promise<void>)[] = [];
    const ctx: BenchContext = {
      stack,
      size,
      short,
      wanted,
      results,
      processes,
      profile,
      workerEnv,
      finished: [],
      loadFinished: [],
      afterTurn: (stop) => afterTurn.push(stop),
      ...measuring(stack, size, results, pids, log),
    };
    await runRows(ctx, afterTurn);
  } finally {
    await processes['noop-worker']?.stop().catch(() => {});
    await stack.close();
  }

  load.after = loadavg().map((v) => round(v, 2));
  const reading = new Reading(results, size);
  const goals = ROWS.flatMap((row) => row.goals ?? []).map((spec) => ({
    goal: spec.goal(size),
    ...spec.check(reading),
  }));
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGb: round(totalmem() / 1024 ** 3, 1),
    node: process.version,
    loadAverage: load,
    mallocArenaMax: process.env.MALLOC_ARENA_MAX,
  };
  const finishedAt = new Date().toISOString();
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt,
    mode: short ? 'short' : 'full',
    server,
    machine,
  };
  const file = writeResults({ ...report, results, goals });
  printTable(machine, goals);
  log(`wrote ${file}`);
  if (results.some((r) => (r.figures.errors ?? 0) > 0 || (r.figures.undelivered ?? 0) > 0)) {
    log('some events were not answered or delivered as expected: see errors above');
    process.exitCode = 1;
  }
  return goals;
}

/**
 * The table's rows in order, each row's code once (rows that share it run together), with the rows a
 * needed row's figures feed. Rows the `turn` rows return are measured in turn before the next row.
 */
async function runRows(ctx: BenchContext, afterTurn: (() => Promise<void>)[]): Promise<void> {
  const needed = new Set(
    ROWS.filter((row) => wanted(row.id)).flatMap((row) => [row.id, row.needs ?? []].flat()),
  );
  let turn: Row[] = [];
  const measureTurn = async () => {
    try {
      if (turn.length) await ctx.measureInTurn(turn);
    } finally {
      turn = [];
      for (const stop of afterTurn.splice(0)) await stop();
    }
  };
  const done = new Set<unknown>();
  try {
    for (const row of ROWS) {
      if (!needed.has(row.id) || done.has(row.run)) continue;
      done.add(row.run);
      if (!row.turn) await measureTurn();
      turn.push(...((await row.run(ctx)) ?? []));
    }
    await measureTurn();
  } finally {
    for (const stop of afterTurn.splice(0)) await stop().catch(() => {});
  }
}

/** Where a run's results go: beside the journal's kept runs, ignored by git until copied under a dated name. */
function writeResults(report: object): string {
  const dir = join(__dirname, '..', '..', 'journal', 'bench-results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, server === 'cluster' ? 'latest-cluster.json' : 'latest.json');
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}

function printTable(
  machine: { cpus: number; loadAverage: { before: number[]; after: number[] } },
  goals: Goal[],
) {
  const classes = CPU_CLASSES.map(([label]) => label).filter((label) =>
    results.some((r) => cpuByClass(r.resources)[label] !== undefined),
  );
  const rows: string[][] = [
    [
      'id',
      'throughput',
      'ack p50/p99 ms',
      'commit p50/p99 ms',
      `CPU ms/event ${classes.join('/')}`,
      'RSS MB worker/noop',
      'actions/event ($/M events)',
      'bytes/event',
    ],
  ];
  for (const r of results) {
    const f = r.figures;
    const rate = f.eventsPerSecond ?? f.workflowsPerSecond ?? f.endToEndEventsPerSecond;
    const pair = (a?: number, b?: number) =>
      a === undefined ? '' : `${Math.round(a)}/${Math.round(b ?? NaN)}`;
    const byClass = cpuByClass(r.resources);
    const server = f.serverActionsPerEvent === undefined ? '' : `, server ${f.serverActionsPerEvent}`;
    rows.push([
      r.id,
      `${rate ?? '-'} /s${f.importLinesPerSecond ? ` (import ${f.importLinesPerSecond} lines/s)` : ''}`,
      pair(f.ackP50Ms, f.ackP99Ms),
      pair(f.commitP50Ms, f.commitP99Ms),
      classes.map((label) => byClass[label] ?? '-').join('/'),
      `${r.resources.worker?.peakRssMb ?? '-'}/${r.resources['noop-worker']?.peakRssMb ?? '-'}`,
      f.actionsPerEvent === undefined ? '' : `${f.actionsPerEvent} ($${f.usdPerMillionEvents})${server}`,
      f.bytesPerEvent === undefined ? '' : `${Math.round(f.bytesPerEvent)}`,
    ]);
  }
  const where = server === 'cluster' ? 'cluster (4 services)' : 'dev server';
  const { before, after } = machine.loadAverage;
  const arenas = `MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}`;
  process.stdout.write(
    `\nsettle benchmarks, Temporal ${where} (${machine.cpus} cores, load ${before.join(' ')} → ${after.join(' ')}, ${arenas})\n`,
  );
  printColumns(rows);
  process.stdout.write('\ngoals (ctx: a context row, not a goal)\n');
  for (const goal of goals) {
    const mark = goal.context ? 'ctx ' : goal.met === null ? 'n/a ' : goal.met ? 'met ' : 'MISS';
    process.stdout.write(`  ${mark}  ${goal.goal.padEnd(58)} ${goal.measured}\n`);
  }
  process.stdout.write('\n');
}

/** `--help`: the usage above and the table of rows. */
function printHelp() {
  process.stdout.write(
    'npm run bench [-- --short] [-- --only=ID,…] [-- --server=dev|cluster|both]\n' +
      "  --short   CI's sizes; --only  the rows named (and the rows their figures need)\n" +
      '  --server  the Temporal dev server (default), the real cluster, or both in turn\n\n',
  );
  for (const row of ROWS) {
    const when = (row.byHand ? 'by hand' : 'CI') + (row.cluster ? ', and on the cluster' : '');
    process.stdout.write(`${row.id.padEnd(5)} ${row.proves} (${when})\n`);
    for (const goal of row.goals ?? []) process.stdout.write(`      goal: ${goal.goal(size)}\n`);
  }
}

function printColumns(rows: string[][]) {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  for (const row of rows)
    process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);
}

function log(message: string) {
  process.stderr.write(`bench: ${message}\n`);
}

main().catch((error) => {
  // Keep what was measured before the failure.
  writeResults({ partial: true, results });
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
