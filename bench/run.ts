/**
 * `npm run bench [-- --short] [-- --only=B0,B1,T0,T3,P,L,R,I]`: settle's benchmarks against baselines
 * measured in the same run, on this machine, on loopback. Each figure is the median of its
 * repetitions; CPU and peak RSS are per process. Writes bench/results.json and prints a table.
 * Bounded in count and time: it stops by itself.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchBareClaimLoop, benchReconcileActivity, CLAIM_LOOP_CONCURRENCY } from './claim-loop';
import { benchFixedLoad, benchFullPath, benchReplayStorm, preparePathEvents } from './full-path';
import { benchImport } from './import';
import { median } from './support/load';
import { ResourceSampler, round, spawnTs, type Child, type Usage } from './support/processes';
import { ProofStack } from './support/stack';
import { benchTemporalFloor, NOOP_TASK_QUEUE } from './temporal-floor';
import type { PaymentEvent } from '../src/domain/payment-event';

const short = process.argv.includes('--short');
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
/**
 * `--server=cluster`: T0 and P (unless --only says otherwise) against the real Temporal server of
 * `npm run topology` (topology/cluster.ts) instead of the dev server; results in results-cluster.json.
 */
const server = process.argv.includes('--server=cluster') ? ('cluster' as const) : ('dev' as const);
const CLUSTER_DEFAULT = ['T0', 'P'];
const wanted = (id: string) => (only ? only.includes(id) : server === 'dev' || CLUSTER_DEFAULT.includes(id));

/** Sizes: the short form finishes in about three minutes on 2 cores; the full one in about eleven. */
const SIZE = short
  ? { reps: 1, claimEvents: 400, floorWorkflows: 300, pathEvents: 300, loadSeconds: 10, importEvents: 1_000 }
  : {
      reps: 3,
      claimEvents: 2_000,
      floorWorkflows: 1_000,
      pathEvents: 600,
      loadSeconds: 20,
      importEvents: 10_000,
    };

type Result = {
  id: string;
  what: string;
  figures: Record<string, number>;
  runs: Record<string, number>[];
  resources: Record<string, Usage>;
};

const results: Result[] = [];

async function main() {
  const startedAt = new Date();
  const load = { before: loadavg().map((v) => round(v, 2)), after: [] as number[] };
  const stack = new ProofStack({ server });
  let noopWorker: Child | undefined;
  try {
    log(
      `starting PostgreSQL, the Temporal ${server === 'cluster' ? 'cluster (topology/cluster.ts)' : 'dev server'}, ` +
        `the gateway and a worker (${short ? 'short' : 'full'} run)`,
    );
    await stack.start();
    await stack.startGateway();
    // SETTLE_BENCH_WORKER_NODE_OPTIONS, e.g. --max-old-space-size=256, tries a heap cap on the worker.
    const workerNodeOptions = process.env.SETTLE_BENCH_WORKER_NODE_OPTIONS;
    const worker = await stack.startWorker(workerNodeOptions ? { NODE_OPTIONS: workerNodeOptions } : {});
    noopWorker = await spawnTs(
      'noop worker',
      ['bench/support/noop-worker.ts'],
      stack.env({ SETTLE_TASK_QUEUE: NOOP_TASK_QUEUE }),
      (output) => output.includes('worker ready'),
    );
    const pids = () => ({
      bench: 'self' as const,
      gateway: stack.gateway?.pid,
      worker: worker.pid,
      'noop-worker': noopWorker?.pid,
      ...stack.temporalPids(),
      postgres: stack.postgresPid(),
    });
    const measure = async <F extends Record<string, number>>(
      id: string,
      what: string,
      run: (rep: number) => Promise<F>,
      reps = SIZE.reps,
    ): Promise<Result> => {
      log(`${id}: ${what}`);
      const sampler = new ResourceSampler(pids);
      const runs: F[] = [];
      for (let rep = 0; rep < reps; rep += 1) runs.push(await run(rep));
      const figures: Record<string, number> = {};
      for (const key of Object.keys(runs[0]!)) figures[key] = round(median(runs.map((r) => r[key]!)), 1);
      const result = { id, what, figures, runs, resources: sampler.stop() };
      results.push(result);
      log(
        `   ${Object.entries(figures)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
      );
      return result;
    };

    if (wanted('B0') || wanted('B1')) {
      // Interleaved, so both see the same noise.
      const b0: Record<string, number>[] = [];
      const b1: Record<string, number>[] = [];
      const sampler = new ResourceSampler(pids);
      await benchBareClaimLoop(stack, 100);
      await benchReconcileActivity(stack, 100);
      for (let rep = 0; rep < SIZE.reps; rep += 1) {
        b0.push(await benchBareClaimLoop(stack, SIZE.claimEvents));
        b1.push(await benchReconcileActivity(stack, SIZE.claimEvents));
      }
      const resources = sampler.stop();
      const summarise = (id: string, what: string, runs: Record<string, number>[]) => {
        const result = {
          id,
          what,
          figures: { eventsPerSecond: round(median(runs.map((r) => r.eventsPerSecond!)), 1) },
          runs,
          resources,
        };
        results.push(result);
        log(`${id}: ${what}: ${result.figures.eventsPerSecond} tx/s`);
      };
      summarise('B0', `bare claim loop, plain pg, ${CLAIM_LOOP_CONCURRENCY} in flight`, b0);
      summarise('B1', `reconcile activity called directly, ${CLAIM_LOOP_CONCURRENCY} in flight`, b1);
    }

    if (wanted('T0')) {
      await benchTemporalFloor(stack, 50, 10);
      for (const concurrency of [10, 50]) {
        await measure(`T0@${concurrency}`, `no-op workflow + no-op activity, ${concurrency} in flight`, () =>
          benchTemporalFloor(stack, SIZE.floorWorkflows, concurrency),
        );
      }
    }

    if (wanted('T3')) {
      await measure('T3@50', 'three no-op activities in sequence, 50 in flight', () =>
        benchTemporalFloor(stack, SIZE.floorWorkflows / 2, 50, 'threeActivitiesWorkflow'),
      );
      await measure('T3L@50', "P's shape: three no-op local activities, 50 in flight", () =>
        benchTemporalFloor(stack, SIZE.floorWorkflows / 2, 50, 'threeLocalActivitiesWorkflow'),
      );
    }

    const finished: PaymentEvent[] = [];
    let pMax = 0;
    if (wanted('P') || wanted('L') || wanted('R')) {
      await benchFullPath(stack, await preparePathEvents(stack, 50), 10);
      for (const concurrency of [10, 50]) {
        const result = await measure(
          `P@${concurrency}`,
          `webhook → gateway → workflow → reconcile → carrier + ERP delivery, ${concurrency} in flight`,
          async () => {
            const events = await preparePathEvents(stack, SIZE.pathEvents);
            const figures = await benchFullPath(stack, events, concurrency);
            finished.push(...events);
            return figures;
          },
        );
        pMax = Math.max(pMax, result.figures.eventsPerSecond!);
      }
    }

    if (wanted('L') && pMax > 0) {
      for (const share of [25, 50]) {
        const rate = round((pMax * share) / 100, 1);
        await measure(`L@${share}%`, `open arrivals at ${rate} events/s for ${SIZE.loadSeconds} s`, () =>
          benchFixedLoad(stack, rate, SIZE.loadSeconds * 1000),
        );
      }
    }

    if (wanted('R') && finished.length) {
      await measure('R', `replay storm: all ${finished.length} finished events again, 50 in flight`, () =>
        benchReplayStorm(stack, finished, 50),
      );
    }

    if (wanted('I')) {
      // Once: 10,000 events take minutes to drain on 2 cores.
      await measure(
        'I',
        `settle import of a ${SIZE.importEvents}-event report`,
        () => benchImport(stack, SIZE.importEvents),
        1,
      );
    }
  } finally {
    await noopWorker?.stop().catch(() => {});
    await stack.close();
  }

  load.after = loadavg().map((v) => round(v, 2));
  const goals = evaluateGoals();
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    mode: short ? 'short' : 'full',
    server,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGb: round(totalmem() / 1024 ** 3, 1),
      node: process.version,
      loadAverage: load,
    },
    results,
    goals,
  };
  const file = join(__dirname, server === 'cluster' ? 'results-cluster.json' : 'results.json');
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  printTable(report.machine, goals);
  log(`wrote ${file}`);
  if (results.some((r) => (r.figures.errors ?? 0) > 0 || (r.figures.undelivered ?? 0) > 0)) {
    log('some events were not answered or delivered as expected: see errors above');
    process.exitCode = 1;
  }
}

type Goal = { goal: string; measured: string; met: boolean | null };

function evaluateGoals(): Goal[] {
  const fig = (id: string, key: string) => results.find((r) => r.id === id)?.figures[key];
  const goals: Goal[] = [];
  const ratio = (goal: string, a: number | undefined, b: number | undefined, min: number) => {
    if (a === undefined || b === undefined) return goals.push({ goal, measured: 'not measured', met: null });
    const value = a / b;
    goals.push({ goal, measured: `${round(value, 2)} (${round(a, 1)} / ${round(b, 1)})`, met: value >= min });
  };
  ratio(
    'P ≥ 0.6 × T0 (50 in flight)',
    fig('P@50', 'eventsPerSecond'),
    fig('T0@50', 'workflowsPerSecond'),
    0.6,
  );
  ratio(
    'P ≥ 0.6 × T0 (10 in flight)',
    fig('P@10', 'eventsPerSecond'),
    fig('T0@10', 'workflowsPerSecond'),
    0.6,
  );
  // Each payment step runs as a local activity first (src/workflows/payment.ts): T3L is P's shape.
  ratio(
    "P vs its Temporal floor T3L (P's shape)",
    fig('P@50', 'eventsPerSecond'),
    fig('T3L@50', 'workflowsPerSecond'),
    0.6,
  );
  ratio('B1 ≥ 0.8 × B0', fig('B1', 'eventsPerSecond'), fig('B0', 'eventsPerSecond'), 0.8);
  const pBest =
    Math.max(fig('P@10', 'eventsPerSecond') ?? 0, fig('P@50', 'eventsPerSecond') ?? 0) || undefined;
  ratio('R ≥ 3 × P', fig('R', 'eventsPerSecond'), pBest, 3);
  const ackP99 = fig('L@50%', 'ackP99Ms');
  goals.push({
    goal: 'ack p99 < 100 ms at 50% load',
    measured: ackP99 === undefined ? 'not measured' : `${ackP99} ms`,
    met: ackP99 === undefined ? null : ackP99 < 100,
  });
  const workerRss = Math.max(...results.map((r) => r.resources.worker?.peakRssMb ?? 0));
  goals.push({ goal: 'worker RSS < 300 MB', measured: `${workerRss} MB`, met: workerRss < 300 });
  goals.push({
    goal: 'moonshot: P ≥ 300 events/s',
    measured: pBest === undefined ? 'not measured' : `${pBest} events/s`,
    met: pBest === undefined ? null : pBest >= 300,
  });
  return goals;
}

function printTable(
  machine: { cpus: number; loadAverage: { before: number[]; after: number[] } },
  goals: Goal[],
) {
  const rows: string[][] = [
    [
      'id',
      'throughput',
      'ack p50/p99 ms',
      'commit p50/p99 ms',
      'gateway/worker/temporal/pg CPU%',
      'worker RSS MB',
    ],
  ];
  for (const r of results) {
    const f = r.figures;
    const rate = f.eventsPerSecond ?? f.workflowsPerSecond ?? f.endToEndEventsPerSecond;
    const pair = (a?: number, b?: number) =>
      a === undefined ? '' : `${Math.round(a)}/${Math.round(b ?? NaN)}`;
    const cpu = ['gateway', 'worker', 'temporal', 'postgres']
      .map((name) => r.resources[name]?.cpuPercent ?? '-')
      .join('/');
    rows.push([
      r.id,
      `${rate ?? '-'} /s${f.importLinesPerSecond ? ` (import ${f.importLinesPerSecond} lines/s)` : ''}`,
      pair(f.ackP50Ms, f.ackP99Ms),
      pair(f.commitP50Ms, f.commitP99Ms),
      cpu,
      String(r.resources.worker?.peakRssMb ?? '-'),
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  process.stdout.write(
    `\nsettle benchmarks (${machine.cpus} cores, load ${machine.loadAverage.before.join(' ')} → ${machine.loadAverage.after.join(' ')})\n`,
  );
  for (const row of rows)
    process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);
  process.stdout.write('\ngoals\n');
  for (const goal of goals) {
    const mark = goal.met === null ? 'n/a ' : goal.met ? 'met ' : 'MISS';
    process.stdout.write(`  ${mark}  ${goal.goal.padEnd(32)} ${goal.measured}\n`);
  }
  process.stdout.write('\n');
}

function log(message: string) {
  process.stderr.write(`bench: ${message}\n`);
}

main().catch((error) => {
  // Keep what was measured before the failure.
  writeFileSync(join(__dirname, 'results.json'), `${JSON.stringify({ partial: true, results }, null, 2)}\n`);
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
