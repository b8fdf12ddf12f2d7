/**
 * `npm run bench [-- --short] [-- --only=B0,B1,T0,T3,P,T3W,L,PE,T3WE,R,LS,BY,RT,RS,I,LI,PR,PRL,PC,TR] [-- --server=dev|cluster|both]`:
 * T3W is P's work without settle: a receiver and a plain workflow of three local activities (T3L's shape),
 * given settle's operator view; T3WE the same started eagerly, with PE.
 * PE is P through `settle serve` (eager start; LE@50% its load row), LI live webhooks during an import,
 * BY the bytes one event keeps in settle's tables, RT the purge of past-retention claims under load,
 * RS a recovery sweep over listed events nearly all applied already (its Temporal starts counted). Every Temporal row counts its billable actions.
 * PR an import against an ERP that allows 20 calls a second (SETTLE_ERP_RATE_LIMIT, two workers), PRL
 * live webhooks at 2/s alongside it (last: they restart the workers with the limit).
 * PC (only when named) P@50 through `settle serve` with payload encryption off, on, on, off (the codec's CPU cost).
 * TR (only when named) P@50 through `settle serve` with tracing off, on, on, off, exporting to a local OTLP endpoint (tracing's CPU cost).
 * LS live webhooks at 25 % of P's best rate, idle, then during a retry storm of every earlier event at 10 ×.
 * settle's benchmarks against baselines measured in the same run, on this machine, on loopback. Each
 * figure is the median of its repetitions; CPU time (per event) and peak RSS are per process. The rows
 * a goal compares at 50 in flight (T3L, P and T3W; T0 and PE) run their repetitions in turn, one of each
 * at a time, so that the machine's load moves under all of them alike.
 * Writes tools/bench/results.json (tools/bench/results-cluster.json for the cluster) and prints a table.
 * Bounded in count and time: it stops by itself.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchBareClaimLoop, benchReconcileActivity, CLAIM_LOOP_CONCURRENCY } from './claim-loop';
import {
  benchFixedLoad,
  benchFullPath,
  benchReplayStorm,
  loadEvents,
  preparePathEvents,
  startPlainConsumer,
} from './full-path';
import { benchImport, prepareImport } from './import';
import { benchLiveDuringImport } from './live-during-import';
import { benchLiveDuringStorm, STORM_FACTOR } from './live-during-storm';
import { benchPressure, benchPressureLive, RateLimitedErp } from './pressure';
import { median } from '../../testkit/load';
import { ResourceSampler, round, spawnTs, type Child, type Usage } from '../../testkit/processes';
import { ProofStack } from '../../testkit/stack';
import type { TemporalCluster } from '../../testkit/cluster';
import { benchTemporalFloor, floorPrefix, floorWorkflowIds, NOOP_TASK_QUEUE } from './temporal-floor';
import { actionsPerEvent } from './actions';
import { benchBytesPerEvent, prepareBytes } from './bytes';
import { benchRecovery, prepareRecovery } from './recovery';
import { benchRetention } from './retention';
import { startOtlpSink } from './support/otlp-sink';
import { paymentWorkflowId } from '../../src/domain/ids';
import type { PaymentEvent } from '../../src/domain/payment-event';

const short = process.argv.includes('--short');
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
/** Rows run only when --only names them. */
const ON_REQUEST = ['PC', 'TR'];
/**
 * `--server=cluster`: T0 and P (unless --only says otherwise) against the real Temporal server of
 * `npm run topology` (testkit/cluster.ts) instead of the dev server; results in results-cluster.json.
 * `--server=both`: the dev-server run, then the cluster's, in one invocation (one stack at a time).
 */
const serverArg = process.argv.find((arg) => arg.startsWith('--server='))?.slice('--server='.length) ?? 'dev';
if (!['dev', 'cluster', 'both'].includes(serverArg)) throw new Error('--server must be dev, cluster or both');
const servers = serverArg === 'both' ? (['dev', 'cluster'] as const) : [serverArg as 'dev' | 'cluster'];
let server: 'dev' | 'cluster' = servers[0]!;
const CLUSTER_DEFAULT = ['T0', 'P'];
const wanted = (id: string) =>
  only ? only.includes(id) : !ON_REQUEST.includes(id) && (server === 'dev' || CLUSTER_DEFAULT.includes(id));

/**
 * Sizes: the short form finishes in about four minutes on 2 cores; the full one in about twelve.
 * `warmup`: the workflows (events) each shape runs unmeasured before its first measured row, so that
 * every process compared is past V8's warm-up, settle's and the baselines' alike. In one run, after a
 * warm-up of 50, three short repetitions of P@50 measured settle's worker at 11.4, 10.6 and 10.1 ms
 * per event and its gateway at 2.9, 2.9 and 2.3, while the no-op worker's T3L stayed within 7.7–8.3.
 */
const SIZE = short
  ? {
      reps: 1,
      claimEvents: 400,
      floorWorkflows: 300,
      pathEvents: 300,
      warmup: 300,
      loadSeconds: 10,
      importEvents: 1_000,
      bytesEvents: 300,
      retentionClaims: 200_000,
      recoveryListed: 1_000,
      pressureEvents: 300,
    }
  : {
      pressureEvents: 2_000,
      bytesEvents: 1_000,
      retentionClaims: 10_000_000,
      reps: 3,
      claimEvents: 2_000,
      floorWorkflows: 1_000,
      pathEvents: 600,
      warmup: 300,
      loadSeconds: 20,
      importEvents: 10_000,
      recoveryListed: 10_000,
    };

/** A happy-path payment's Temporal actions: its start and one workflow task of local activities. */
const HAPPY_PATH_ACTIONS = 2;
/** PR and PRL: the calls a second the ERP allows (and SETTLE_ERP_RATE_LIMIT), and PRL's live rate. */
const PRESSURE_LIMIT = 20;
const PRESSURE_LIVE_RATE = 2;

/** Of the recovery sweep's listed events, those never delivered (the rest are applied already). */
const RECOVERY_MISSED = 10;

/** A path row's runs: one payment workflow per event. */
const runsOf = (events: PaymentEvent[]) => ({ ids: events.map((event) => paymentWorkflowId(event.id)) });

type Result = {
  id: string;
  what: string;
  figures: Record<string, number>;
  runs: Record<string, number>[];
  resources: Record<string, Usage>;
};

let results: Result[] = [];

/** One repetition of a row: its figures, what each process spent during it, the events it handled. */
type Rep = { figures: Record<string, number>; usage: Record<string, Usage>; events: number };
/** A row to measure: `once` runs one repetition of it. */
type Row = { id: string; what: string; reps: number; once: (rep: number) => Promise<Rep> };

/**
 * glibc's malloc arenas, as the Dockerfile sets them for production (`MALLOC_ARENA_MAX=2`): every
 * process this run spawns (gateway, workers, PostgreSQL) inherits it unless the caller set another.
 */
process.env.MALLOC_ARENA_MAX ??= '2';

async function main() {
  const summaries: string[] = [];
  for (const next of servers) {
    server = next;
    results = [];
    const goals = await benchOn();
    const p50 = goals.find((goal) => goal.goal.startsWith('P ≥ 0.6 × T0 (50'));
    const p10 = goals.find((goal) => goal.goal.startsWith('P ≥ 0.6 × T0 (10'));
    summaries.push(`${next}: P/T0 ${p50?.measured} at 50 in flight, ${p10?.measured} at 10`);
  }
  if (servers.length > 1) process.stdout.write(`P/T0 on both servers\n  ${summaries.join('\n  ')}\n`);
}

/** One stack (the dev server or the cluster), the rows wanted on it, its table and results file. */
async function benchOn(): Promise<Goal[]> {
  const startedAt = new Date();
  const load = { before: loadavg().map((v) => round(v, 2)), after: [] as number[] };
  const stack = new ProofStack({ server });
  let noopWorker: Child | undefined;
  try {
    log(
      `starting PostgreSQL, the Temporal ${server === 'cluster' ? 'cluster (testkit/cluster.ts)' : 'dev server'}, ` +
        `the gateway and a worker (${short ? 'short' : 'full'} run)`,
    );
    await stack.start();
    // SETTLE_BENCH_WORKER_CPU_PROF_DIR: Node's --cpu-prof for both workers, the gateway and serve (PE's,
    // and each variant's of PC and TR), every thread (the SDK's workflow thread included), one
    // .cpuprofile per thread written there when the process exits; `npx tsx tools/bench/profile-top.ts
    // DIR` tables them (docs/performance.md).
    const profDir = process.env.SETTLE_BENCH_WORKER_CPU_PROF_DIR;
    const nodeArgs = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    await stack.startGateway(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}/gateway`] : []);
    // SETTLE_BENCH_WORKER_NODE_OPTIONS (e.g. --max-semi-space-size=4) and SETTLE_BENCH_WORKER_OPTIONS
    // (SDK settings, testkit/worker-options.ts) apply to settle's worker and the no-op worker.
    const workerNodeOptions = process.env.SETTLE_BENCH_WORKER_NODE_OPTIONS;
    let worker = await stack.startWorker(
      workerNodeOptions ? { NODE_OPTIONS: workerNodeOptions } : {},
      nodeArgs,
    );
    noopWorker = await spawnTs(
      'noop worker',
      [...nodeArgs, 'tools/bench/support/noop-worker.ts'],
      stack.env({
        SETTLE_TASK_QUEUE: NOOP_TASK_QUEUE,
        ...(workerNodeOptions ? { NODE_OPTIONS: workerNodeOptions } : {}),
      }),
      (output) => output.includes('worker ready'),
    );
    let serve: Child | undefined;
    let plainConsumer: Child | undefined;
    const pids = () => ({
      bench: 'self' as const,
      gateway: stack.gateway?.pid,
      serve: serve?.pid,
      'plain-consumer': plainConsumer?.pid,
      worker: worker.pid,
      'noop-worker': noopWorker?.pid,
      ...stack.temporalPids(),
      postgres: stack.postgresPid(),
    });
    /**
     * A row, `reps` repetitions of which make its figures. `prepare` (rows of shipments, events) runs
     * before the resources are sampled, so each process's CPU covers only the measured work; `events`
     * is how many events (workflows, transactions) one repetition handles, for CPU ms per event.
     */
    const row = <F extends Record<string, number>, P = undefined>(
      id: string,
      what: string,
      spec: {
        prepare?: (rep: number) => Promise<P>;
        run: (prepared: P, rep: number) => Promise<F>;
        events: number | ((figures: F) => number);
        reps?: number;
        /** The workflow IDs a repetition ran: their histories give the row's actions per event. */
        workflowIds?: (prepared: P, figures: F, startedAt: Date) => { ids: string[]; since?: Date };
      },
    ): Row => ({
      id,
      what,
      reps: spec.reps ?? SIZE.reps,
      once: async (rep) => {
        const prepared = (await spec.prepare?.(rep)) as P;
        // On the cluster, the server's own count of the actions too (before and after the run).
        const serverCount =
          spec.workflowIds && stack.cluster ? await settledActions(stack.cluster) : undefined;
        const sampler = new ResourceSampler(pids, ['worker', 'noop-worker']);
        const startedAt = new Date();
        const figures = await spec.run(prepared, rep);
        const usage = sampler.stop();
        const events = typeof spec.events === 'number' ? spec.events : spec.events(figures);
        const runsOf = spec.workflowIds?.(prepared, figures, startedAt);
        const counted = runsOf
          ? await actionsPerEvent(stack.client, runsOf.ids, { since: runsOf.since })
          : {};
        let server = {};
        if (serverCount !== undefined && stack.cluster) {
          const counted = serverActions(serverCount, await settledActions(stack.cluster), events);
          log(`   the server's action counter, per event: ${counted.byType}`);
          server = { serverActionsPerEvent: round(counted.total, 2) };
        }
        return { figures: { ...figures, ...counted, ...server }, usage, events };
      },
    });
    /** A row's medians over its repetitions, kept in the results and logged. */
    const summarise = (measured: Row, reps: Rep[]): Result => {
      const runs = reps.map((rep) => rep.figures);
      const events = reps.reduce((sum, rep) => sum + rep.events, 0);
      const figures: Record<string, number> = {};
      for (const key of Object.keys(runs[0]!)) figures[key] = round(median(runs.map((r) => r[key]!)), 1);
      const result = {
        id: measured.id,
        what: measured.what,
        figures,
        runs,
        resources: perEvent(sumUsage(reps.map((rep) => rep.usage)), events),
      };
      results.push(result);
      log(
        `${measured.id}: ${Object.entries(figures)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
      );
      log(`   CPU ms/event: ${cpuLine(result.resources)}`);
      for (const name of ['worker', 'noop-worker']) {
        const threads = result.resources[name]?.threads;
        if (!threads || (result.resources[name]?.cpuMsPerEvent ?? 0) < 1) continue;
        const top = Object.entries(threads)
          .sort(([, a], [, b]) => b - a)
          .slice(0, 5)
          .map(([thread, seconds]) => `${thread} ${round((seconds * 1000) / events, 1)}`);
        log(`   ${name} threads, CPU ms/event: ${top.join(', ')}`);
      }
      return result;
    };
    /** Runs a row's repetitions one after another and keeps the medians. */
    const measure = async <F extends Record<string, number>, P = undefined>(
      ...args: Parameters<typeof row<F, P>>
    ): Promise<Result> => {
      const measured = row(...args);
      log(`${measured.id}: ${measured.what}`);
      const reps: Rep[] = [];
      for (let rep = 0; rep < measured.reps; rep += 1) reps.push(await measured.once(rep));
      return summarise(measured, reps);
    };
    /**
     * The rows a goal compares, in turn: the first repetition of each, then the second of each, and so
     * on. A shared machine's load moves by the minute; measured in turn, each row's repetitions meet the
     * same moments, where rows measured one after the other would each meet their own.
     */
    const measureInTurn = async (rows: Row[]): Promise<Result[]> => {
      const reps = rows.map((): Rep[] => []);
      const most = Math.max(0, ...rows.map((r) => r.reps));
      for (let rep = 0; rep < most; rep += 1) {
        for (const [index, measured] of rows.entries()) {
          if (rep >= measured.reps) continue;
          const turn = rows.length > 1 ? ', in turn' : '';
          log(`${measured.id}: ${measured.what} (repetition ${rep + 1} of ${measured.reps}${turn})`);
          reps[index]!.push(await measured.once(rep));
        }
      }
      return rows.map((measured, index) => summarise(measured, reps[index]!));
    };

    if (wanted('B0') || wanted('B1')) {
      // Interleaved, so both see the same noise (their CPU per transaction is therefore shared).
      const b0: Record<string, number>[] = [];
      const b1: Record<string, number>[] = [];
      await benchBareClaimLoop(stack, 100);
      await benchReconcileActivity(stack, 100);
      const sampler = new ResourceSampler(pids);
      for (let rep = 0; rep < SIZE.reps; rep += 1) {
        b0.push(await benchBareClaimLoop(stack, SIZE.claimEvents));
        b1.push(await benchReconcileActivity(stack, SIZE.claimEvents));
      }
      const resources = perEvent(sampler.stop(), 2 * SIZE.reps * SIZE.claimEvents);
      const keep = (id: string, what: string, runs: Record<string, number>[]) => {
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
      keep('B0', `bare claim loop, plain pg, ${CLAIM_LOOP_CONCURRENCY} in flight`, b0);
      keep('B1', `reconcile activity called directly, ${CLAIM_LOOP_CONCURRENCY} in flight`, b1);
    }

    // T0@50 and PE@50 (P_eager ≥ 1.2 × T0) are measured in turn once `settle serve` is up.
    const floorRow = (
      concurrency: number,
      workflowType: 'noopWorkflow' | 'threeActivitiesWorkflow' | 'threeLocalActivitiesWorkflow',
      workflows: number,
    ) => ({
      prepare: async () => floorPrefix(),
      run: (prefix: string) => benchTemporalFloor(stack, workflows, concurrency, workflowType, prefix),
      events: workflows,
      workflowIds: (prefix: string) => ({ ids: floorWorkflowIds(prefix, workflows) }),
    });
    const t0At50 = () =>
      row(
        'T0@50',
        'no-op workflow + no-op activity, 50 in flight',
        floorRow(50, 'noopWorkflow', SIZE.floorWorkflows),
      );
    if (wanted('T0')) {
      await benchTemporalFloor(stack, SIZE.warmup, 10);
      await measure(
        'T0@10',
        'no-op workflow + no-op activity, 10 in flight',
        floorRow(10, 'noopWorkflow', SIZE.floorWorkflows),
      );
      if (!wanted('PE')) await measureInTurn([t0At50()]);
    }

    // The rows the goals on P@50 compare it with (T3L@50, T3W@50) are measured in turn with it.
    const inTurn: Row[] = [];
    if (wanted('T3')) {
      await benchTemporalFloor(stack, SIZE.warmup, 50, 'threeActivitiesWorkflow');
      await measure(
        'T3@50',
        'three no-op activities in sequence, 50 in flight',
        floorRow(50, 'threeActivitiesWorkflow', SIZE.floorWorkflows / 2),
      );
      await benchTemporalFloor(stack, SIZE.warmup, 50, 'threeLocalActivitiesWorkflow');
      inTurn.push(
        row(
          'T3L@50',
          "P's shape: three no-op local activities, 50 in flight",
          floorRow(50, 'threeLocalActivitiesWorkflow', SIZE.floorWorkflows / 2),
        ),
      );
    }

    const finished: PaymentEvent[] = [];
    /** The events of the open-arrival rows L, which LS's storm delivers again with P's. */
    const loadFinished: PaymentEvent[] = [];
    const pathRow = (concurrency: number) =>
      row(
        `P@${concurrency}`,
        `webhook → gateway → workflow → reconcile → carrier + ERP delivery, ${concurrency} in flight`,
        {
          prepare: () => preparePathEvents(stack, SIZE.pathEvents),
          run: async (events) => {
            const figures = await benchFullPath(stack, events, concurrency);
            finished.push(...events);
            return figures;
          },
          events: SIZE.pathEvents,
          workflowIds: runsOf,
        },
      );
    if (wanted('P') || wanted('L') || wanted('R') || wanted('LS')) {
      await benchFullPath(stack, await preparePathEvents(stack, SIZE.warmup), 10);
      await measureInTurn([pathRow(10)]);
      inTurn.push(pathRow(50));
    }

    /**
     * P's work without settle: a plain workflow of three local activities, receiver and worker in one
     * process (tools/bench/support/plain-consumer.ts); the same events, receiver and load generator as P.
     * Starts it (`plainConsumer`, with `env`) and warms it up; its row runs 50 in flight.
     */
    const plainConsumerRow = async (id: string, what: string, env: Record<string, string> = {}) => {
      const started = await startPlainConsumer(stack, {
        nodeArgs,
        env: {
          // Given settle's operator view (what a happy-path run carries), unless the caller chose another.
          SETTLE_BENCH_PLAIN_VIEW: process.env.SETTLE_BENCH_PLAIN_VIEW ?? 'full',
          ...env,
          ...(workerNodeOptions ? { NODE_OPTIONS: workerNodeOptions } : {}),
        },
      });
      plainConsumer = started.child;
      const { path, claims } = started;
      await benchFullPath(path, await preparePathEvents(stack, SIZE.warmup), 50, claims);
      return row(id, what, {
        prepare: () => preparePathEvents(stack, SIZE.pathEvents),
        run: (events) => benchFullPath(path, events, 50, claims),
        events: SIZE.pathEvents,
        workflowIds: (events) => ({ ids: events.map((event) => `plain:${event.id}`) }),
      });
    };
    const stopPlainConsumer = async () => {
      await plainConsumer?.stop();
      plainConsumer = undefined;
    };

    try {
      if (wanted('T3W'))
        inTurn.push(
          await plainConsumerRow('T3W@50', "P's work without settle: T3L's shape doing it, 50 in flight"),
        );
      await measureInTurn(inTurn);
    } finally {
      await stopPlainConsumer();
    }
    /** The best rate of the rows `P@…` (or `PE@…`) measured so far: 0 when none was. */
    const bestRate = (prefix: 'P@' | 'PE@') =>
      Math.max(0, ...results.filter((r) => r.id.startsWith(prefix)).map((r) => r.figures.eventsPerSecond!));
    const pMax = bestRate('P@');

    if (wanted('L') && pMax > 0) {
      for (const share of [25, 50]) {
        const rate = round((pMax * share) / 100, 1);
        await measure(`L@${share}%`, `open arrivals at ${rate} events/s for ${SIZE.loadSeconds} s`, {
          prepare: () => preparePathEvents(stack, loadEvents(rate, SIZE.loadSeconds * 1000)),
          run: async (events) => {
            const figures = await benchFixedLoad(stack, rate, SIZE.loadSeconds * 1000, events);
            loadFinished.push(...events.slice(0, figures.sent));
            return figures;
          },
          events: (figures) => figures.sent,
          workflowIds: (events, figures) => runsOf(events.slice(0, figures.sent)),
        });
      }
    }

    if (wanted('PE')) {
      // `settle serve`: gateway and worker in one process on one connection, runs started eagerly.
      const started = await stack.startServe(
        {},
        profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}/serve`] : [],
      );
      serve = started.child;
      const eager = stack.throughGateway(started.gatewayUrl);
      const eagerRow = (concurrency: number) =>
        row(
          `PE@${concurrency}`,
          `P through settle serve (eager start, one process), ${concurrency} in flight`,
          {
            prepare: () => preparePathEvents(stack, SIZE.pathEvents),
            run: (events) => benchFullPath(eager, events, concurrency),
            events: SIZE.pathEvents,
            workflowIds: runsOf,
          },
        );
      try {
        await benchFullPath(eager, await preparePathEvents(stack, SIZE.warmup), 10);
        await measureInTurn([eagerRow(10)]);
        // T0@50 in turn with PE@50, the no-op worker warmed again first (serve idles during its turns,
        // as settle's worker idles during PE's).
        if (wanted('T0')) await benchTemporalFloor(stack, SIZE.warmup, 50);
        const againstEager = wanted('T0') ? [t0At50()] : [];
        // T3W's plain consumer starting eagerly, as serve does: P's work without settle, against PE.
        if (wanted('T3WE'))
          againstEager.push(
            await plainConsumerRow(
              'T3WE@50',
              "P's work without settle, T3L's shape, started eagerly, 50 in flight",
              { SETTLE_BENCH_PLAIN_EAGER: '1' },
            ),
          );
        await measureInTurn([...againstEager, eagerRow(50)]);
        // Stopped before LE's row, which it would share the machine with.
        await stopPlainConsumer();
        const eagerMax = bestRate('PE@');
        if (eagerMax > 0) {
          const rate = round(eagerMax / 2, 1);
          await measure('LE@50%', `open arrivals at ${rate} events/s through settle serve`, {
            prepare: () => preparePathEvents(stack, loadEvents(rate, SIZE.loadSeconds * 1000)),
            run: (events) => benchFixedLoad(eager, rate, SIZE.loadSeconds * 1000, events),
            events: (figures) => figures.sent,
            workflowIds: (events, figures) => runsOf(events.slice(0, figures.sent)),
          });
        }
      } finally {
        await stopPlainConsumer().catch(() => {});
        await serve.stop().catch(() => {});
        serve = undefined;
      }
    }

    /**
     * P@50 through `settle serve` started with `off`'s and then `on`'s environment, in the order off,
     * on, on, off: the tables grow and the machine's load drifts through a row, and this order gives
     * both variants the same mean position, so a drift does not read as the cost (rows
     * `<row>@50 off #1` … `<row>@50 off #2`; the goals take each variant's mean). `after` runs after
     * each variant's serve stopped.
     */
    const offOnOnOff = async (
      row: string,
      what: string,
      env: { off: Record<string, string>; on: Record<string, string> },
      after?: (variant: string) => void,
    ) => {
      for (const [variant, extra] of [
        ['off #1', env.off],
        ['on #1', env.on],
        ['on #2', env.on],
        ['off #2', env.off],
      ] as const) {
        // Profiled (SETTLE_BENCH_WORKER_CPU_PROF_DIR), each variant's serve in a folder of its own.
        const started = await stack.startServe(
          extra,
          profDir
            ? ['--cpu-prof', `--cpu-prof-dir=${profDir}/serve-${row}-${variant.replace(/\W+/g, '')}`]
            : [],
        );
        serve = started.child;
        const through = stack.throughGateway(started.gatewayUrl);
        try {
          await benchFullPath(through, await preparePathEvents(stack, 50), 10);
          await measure(`${row}@50 ${variant}`, `P through settle serve, ${what} ${variant}, 50 in flight`, {
            prepare: () => preparePathEvents(stack, SIZE.pathEvents),
            run: (events) => benchFullPath(through, events, 50),
            events: SIZE.pathEvents,
          });
        } finally {
          await serve.stop().catch(() => {});
          serve = undefined;
        }
        after?.(variant);
      }
    };

    if (wanted('PC')) {
      // The payload codec's cost: encryption off (SETTLE_PAYLOAD_KEYS empty) and on (the stack's key).
      await offOnOnOff('PC', 'payload encryption', { off: { SETTLE_PAYLOAD_KEYS: '' }, on: {} });
    }

    if (wanted('TR')) {
      // Tracing's cost: tracing off and on (http/protobuf, the default, to an OTLP endpoint in this
      // process; sampler and batching at their defaults).
      const sink = await startOtlpSink();
      try {
        await offOnOnOff(
          'TR',
          'tracing',
          { off: {}, on: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
          (variant) => {
            if (variant === 'on #1' && sink.received().requests === 0) {
              throw new Error(
                'TR@50 on: the OTLP endpoint received no export; the row would measure nothing',
              );
            }
          },
        );
        log(
          `TR: the OTLP endpoint received ${sink.received().requests} exports, ${sink.received().bytes} bytes`,
        );
      } finally {
        await sink.close();
      }
    }

    if (wanted('R') && finished.length) {
      await measure('R', `replay storm: all ${finished.length} finished events again, 50 in flight`, {
        run: () => benchReplayStorm(stack, finished, 50),
        events: finished.length,
        // A duplicate is answered from its claim before any start: only a run started since costs.
        workflowIds: (_, __, startedAt) => ({
          ids: finished.map((e) => paymentWorkflowId(e.id)),
          since: startedAt,
        }),
      });
    }

    if (wanted('LS') && pMax > 0 && finished.length) {
      // Once: a provider's retry storm (every event of the earlier rows again, at 10 × the live rate).
      const rate = round(pMax / 4, 1);
      const earlier = [...finished, ...loadFinished];
      await measure(
        'LS',
        `live at ${rate} events/s for ${SIZE.loadSeconds} s, idle then during a retry storm of ${earlier.length} events at ${STORM_FACTOR} ×`,
        {
          run: () => benchLiveDuringStorm(stack, earlier, rate, SIZE.loadSeconds * 1000),
          events: (figures) => figures.liveSent! + figures.stormSent!,
          reps: 1,
        },
      );
    }

    if (wanted('BY')) {
      // Once: the growth of every settle table and index over a known number of events.
      await measure('BY', `bytes per event: ${SIZE.bytesEvents} events through the path, 50 in flight`, {
        prepare: () => prepareBytes(stack, SIZE.bytesEvents),
        run: (prepared) => benchBytesPerEvent(stack, prepared, 50),
        events: SIZE.bytesEvents,
        reps: 1,
        workflowIds: (prepared) => runsOf(prepared.events),
      });
    }

    if (wanted('RT')) {
      // Once: live webhooks at 25 % load (4/s without P) idle, then while the purge of past-retention
      // claims generated in SQL runs; then four more fill-and-purge cycles. The full row's purge of
      // 10 M claims takes minutes, so its live windows are three times the others' (60 s, about 240
      // events each, all of it inside the purge); the short one's purge takes seconds.
      const rate = pMax > 0 ? round(pMax / 4, 1) : 4;
      const liveMs = (short ? 1 : 3) * SIZE.loadSeconds * 1000;
      await measure('RT', `purge of ${SIZE.retentionClaims} past-retention claims under live load`, {
        run: () => benchRetention(stack, SIZE.retentionClaims, rate, liveMs),
        events: (figures) => figures.sent!,
        reps: 1,
      });
    }

    if (wanted('RS')) {
      // Once: the Schedule's sweep after a short outage, from the cursor, through the webhook's door.
      await measure(
        'RS',
        `recovery sweep: ${SIZE.recoveryListed} listed, ${SIZE.recoveryListed - RECOVERY_MISSED} already applied`,
        {
          prepare: () => prepareRecovery(stack, SIZE.recoveryListed, RECOVERY_MISSED),
          run: (prepared) => benchRecovery(stack, prepared),
          events: SIZE.recoveryListed,
          reps: 1,
        },
      );
    }

    if (wanted('I')) {
      // Once: 10,000 events take minutes to drain on 2 cores.
      await measure('I', `settle import of a ${SIZE.importEvents}-event report`, {
        prepare: () => prepareImport(stack, SIZE.importEvents),
        run: (report) => benchImport(stack, report),
        events: SIZE.importEvents,
        reps: 1,
      });
    }
    if (wanted('LI') && pMax > 0) {
      // Live webhooks at 25 % load, idle and then while an import's backlog drains (the bulk task queue).
      const rate = round(pMax / 4, 1);
      await measure(
        'LI',
        `live at ${rate} events/s for ${SIZE.loadSeconds} s, idle then during a ${SIZE.importEvents}-event import`,
        {
          run: () => benchLiveDuringImport(stack, rate, SIZE.loadSeconds * 1000, SIZE.importEvents),
          events: (figures) => figures.importAccepted! + 2 * rate * SIZE.loadSeconds,
          reps: 1,
        },
      );
    }
    if (wanted('PR') || wanted('PRL')) {
      // Last: two workers with the ERP's limit in place of the worker every row above used.
      const erp = new RateLimitedErp(PRESSURE_LIMIT);
      stack.receiver.behaviour = erp.behaviour;
      await stack.stopWorkers();
      const limited = { SETTLE_ERP_RATE_LIMIT: String(PRESSURE_LIMIT) };
      worker = await stack.startWorker(limited, nodeArgs);
      await stack.startWorker(limited, nodeArgs);
      if (wanted('PR')) {
        await measure('PR', `${SIZE.pressureEvents} imported at once, the ERP allowing ${PRESSURE_LIMIT}/s`, {
          run: () => benchPressure(stack, erp, SIZE.pressureEvents),
          events: SIZE.pressureEvents,
          reps: 1,
        });
      }
      if (wanted('PRL')) {
        await measure(
          'PRL',
          `live at ${PRESSURE_LIVE_RATE}/s idle, then during an import of ${SIZE.pressureEvents}, the ERP allowing ${PRESSURE_LIMIT}/s`,
          {
            run: () =>
              benchPressureLive(stack, erp, SIZE.pressureEvents, PRESSURE_LIVE_RATE, SIZE.loadSeconds * 1000),
            events: (figures) => figures.importAccepted! + 2 * PRESSURE_LIVE_RATE * SIZE.loadSeconds,
            reps: 1,
          },
        );
      }
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
      mallocArenaMax: process.env.MALLOC_ARENA_MAX,
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
  return goals;
}

/** Sums the usage of several sampled windows (one per repetition): CPU adds up, RSS is the peak. */
function sumUsage(windows: Record<string, Usage>[]): Record<string, Usage> {
  const total: Record<string, Usage> = {};
  for (const window of windows) {
    for (const [name, usage] of Object.entries(window)) {
      const sum = (total[name] ??= { cpuSeconds: 0, seconds: 0, cpuPercent: 0, peakRssMb: 0 });
      sum.cpuSeconds += usage.cpuSeconds;
      sum.seconds += usage.seconds;
      sum.peakRssMb = Math.max(sum.peakRssMb, usage.peakRssMb);
      for (const [thread, seconds] of Object.entries(usage.threads ?? {})) {
        sum.threads ??= {};
        sum.threads[thread] = round((sum.threads[thread] ?? 0) + seconds, 2);
      }
    }
  }
  for (const sum of Object.values(total)) {
    sum.cpuPercent = round((sum.cpuSeconds / Math.max(sum.seconds, 0.001)) * 100, 0);
    sum.cpuSeconds = round(sum.cpuSeconds, 2);
    sum.seconds = round(sum.seconds, 2);
  }
  return total;
}

/** Adds each process's CPU milliseconds per event (workflow, transaction) over `events`. */
function perEvent(resources: Record<string, Usage>, events: number): Record<string, Usage> {
  for (const usage of Object.values(resources))
    usage.cpuMsPerEvent = round((usage.cpuSeconds * 1000) / Math.max(events, 1), 2);
  return resources;
}

/**
 * The process classes of the CPU-per-event columns: `temporal` is the dev server, or the four
 * services of a cluster summed (each is in results-cluster.json); `temporal-pg` the cluster's own
 * PostgreSQL; `pg` settle's PostgreSQL (postmaster and backends); `bench` the load generator with
 * its downstream receiver (and `settle import` in I).
 */
const CPU_CLASSES: [string, (name: string) => boolean][] = [
  ['gateway', (name) => name === 'gateway'],
  ['worker', (name) => name === 'worker'],
  ['serve', (name) => name === 'serve'],
  ['noop', (name) => name === 'noop-worker'],
  ['plain', (name) => name === 'plain-consumer'],
  ['temporal', (name) => name.startsWith('temporal') && name !== 'temporal-postgres'],
  ['temporal-pg', (name) => name === 'temporal-postgres'],
  ['pg', (name) => name === 'postgres'],
  ['bench', (name) => name === 'bench'],
];

/**
 * The cluster's actions in the namespace so far by `action_type` (its frontend's `action` counter),
 * read once two reads 2 s apart agree: the server publishes its counters every second.
 */
async function settledActions(cluster: TemporalCluster): Promise<Map<string, number>> {
  const total = (counts: Map<string, number>) => [...counts.values()].reduce((sum, n) => sum + n, 0);
  let last = await cluster.actionCounts();
  for (let read = 0; read < 30; read += 1) {
    await sleep(2_000);
    const now = await cluster.actionCounts();
    if (total(now) === total(last)) return now;
    last = now;
  }
  throw new Error(`the server's action count was still moving after 60 s (last ${total(last)})`);
}

/**
 * What the server counted between two reads, per event: its total (`serverActionsPerEvent`, beside
 * the histories' count by Temporal Cloud's rules: docs/capacity.md, "Temporal actions") and each
 * type's count for the log.
 */
function serverActions(before: Map<string, number>, after: Map<string, number>, events: number) {
  const byType = [...after]
    .map(([type, n]) => [type, (n - (before.get(type) ?? 0)) / events] as const)
    .filter(([, n]) => n > 0);
  const total = byType.reduce((sum, [, n]) => sum + n, 0);
  return { total, byType: byType.map(([type, n]) => `${type} ${round(n, 2)}`).join(', ') };
}

function cpuByClass(resources: Record<string, Usage>): Record<string, number | undefined> {
  const out: Record<string, number | undefined> = {};
  for (const [label, matches] of CPU_CLASSES) {
    const members = Object.entries(resources).filter(([name]) => matches(name));
    out[label] = members.length
      ? round(
          members.reduce((sum, [, usage]) => sum + (usage.cpuMsPerEvent ?? 0), 0),
          1,
        )
      : undefined;
  }
  return out;
}

function cpuLine(resources: Record<string, Usage>): string {
  return Object.entries(cpuByClass(resources))
    .filter(([, ms]) => ms !== undefined)
    .map(([label, ms]) => `${label} ${ms}`)
    .join(', ');
}

/** A goal, or with `context` a ratio kept beside the goals for reference, never a MISS. */
type Goal = { goal: string; measured: string; met: boolean | null; context?: true };

function evaluateGoals(): Goal[] {
  const fig = (id: string, key: string) => results.find((r) => r.id === id)?.figures[key];
  const goals: Goal[] = [];
  const ratio = (
    goal: string,
    a: number | undefined,
    b: number | undefined,
    min: number,
    byRepetition: number[] = [],
    kind: 'goal' | 'context' = 'goal',
  ) => {
    const context = kind === 'context' ? { context: true as const } : {};
    if (a === undefined || b === undefined)
      return goals.push({ goal, measured: 'not measured', met: null, ...context });
    const value = a / b;
    const each =
      byRepetition.length > 1 ? `; by repetition ${byRepetition.map((r) => round(r, 2)).join(', ')}` : '';
    goals.push({
      goal,
      measured: `${round(value, 2)} (${round(a, 1)} / ${round(b, 1)}${each})`,
      met: value >= min,
      ...context,
    });
  };
  /** The rate of `a`'s n-th repetition over `b`'s: rows measured in turn ran theirs side by side. */
  const rateRatios = (a: string, b: string) => {
    const rate = (id: string) =>
      results
        .find((r) => r.id === id)
        ?.runs.map((run) => run.eventsPerSecond ?? run.workflowsPerSecond ?? Number.NaN) ?? [];
    const [ra, rb] = [rate(a), rate(b)];
    return ra.length === rb.length ? ra.map((rateA, n) => rateA / rb[n]!) : [];
  };
  // The floors (T0, T3L: workflows whose activities do nothing) are context, not goals: settle cannot
  // cost less than doing nothing (docs/performance.md, "The bound").
  ratio(
    'P ≥ 0.6 × T0 (50 in flight)',
    fig('P@50', 'eventsPerSecond'),
    fig('T0@50', 'workflowsPerSecond'),
    0.6,
    [],
    'context',
  );
  ratio(
    'P ≥ 0.6 × T0 (10 in flight)',
    fig('P@10', 'eventsPerSecond'),
    fig('T0@10', 'workflowsPerSecond'),
    0.6,
    [],
    'context',
  );
  // Each payment step runs as a local activity first (src/workflows/payment.ts): T3L is P's shape.
  ratio(
    "P ≥ 1.0 × T3L (P's shape, 50 in flight)",
    fig('P@50', 'eventsPerSecond'),
    fig('T3L@50', 'workflowsPerSecond'),
    1.0,
    rateRatios('P@50', 'T3L@50'),
    'context',
  );
  // The same work without settle (T3W): the plain Temporal consumer a team would write instead,
  // given what settle's happy-path runs carry for the operator view.
  ratio(
    "P ≥ 1.0 × T3W (P's work without settle, given settle's view, 50 in flight)",
    fig('P@50', 'eventsPerSecond'),
    fig('T3W@50', 'eventsPerSecond'),
    1.0,
    rateRatios('P@50', 'T3W@50'),
  );
  const cpu = (id: string) => {
    const row = results.find((r) => r.id === id);
    return row ? cpuByClass(row.resources) : {};
  };
  const upTo = (goal: string, a: number | undefined, b: number | undefined, max: number) => {
    if (!a || !b) return goals.push({ goal, measured: 'not measured', met: null });
    const value = a / b;
    goals.push({ goal, measured: `${round(value, 2)} (${round(a, 1)} / ${round(b, 1)})`, met: value <= max });
  };
  upTo('worker CPU/event ≤ 1.1 × no-op worker (P@50 / T3L@50)', cpu('P@50').worker, cpu('T3L@50').noop, 1.1);
  const own = cpu('P@50');
  upTo(
    "settle's CPU/event (gateway+worker+pg) ≤ Temporal's (P@50)",
    own.gateway === undefined ? undefined : (own.gateway ?? 0) + (own.worker ?? 0) + (own.pg ?? 0),
    own.temporal === undefined ? undefined : own.temporal + (own['temporal-pg'] ?? 0),
    1,
  );
  // The mean of a variant's two rows (off, on, on, off), each serve's CPU plus its PostgreSQL's.
  const serveCpu = (row: string, variant: 'on' | 'off') => {
    const each = [1, 2]
      .map((n) => cpu(`${row}@50 ${variant} #${n}`))
      .map((r) => (r.serve === undefined ? undefined : r.serve + (r.pg ?? 0)));
    return each.every((ms) => ms !== undefined) ? (each[0]! + each[1]!) / 2 : undefined;
  };
  upTo(
    "payload codec ≤ 5 % of settle's CPU/event (serve+pg, PC@50 on / off, off-on-on-off)",
    serveCpu('PC', 'on'),
    serveCpu('PC', 'off'),
    1.05,
  );
  upTo(
    "tracing ≤ 25 % of settle's CPU/event (serve+pg, TR@50 on / off, off-on-on-off)",
    serveCpu('TR', 'on'),
    serveCpu('TR', 'off'),
    1.25,
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
  upTo(
    'worker RSS ≤ 1.1 × no-op worker (P@50 / T3L@50)',
    results.find((r) => r.id === 'P@50')?.resources.worker?.peakRssMb,
    results.find((r) => r.id === 'T3L@50')?.resources['noop-worker']?.peakRssMb,
    1.1,
  );
  ratio(
    'P_eager ≥ 1.2 × T0 (50 in flight, settle serve)',
    fig('PE@50', 'eventsPerSecond'),
    fig('T0@50', 'workflowsPerSecond'),
    1.2,
    rateRatios('PE@50', 'T0@50'),
    'context',
  );
  // The same work without settle, given settle's view, started eagerly as serve starts its runs.
  ratio(
    "P_eager ≥ 1.0 × T3WE (P's work without settle, given settle's view, started eagerly, 50 in flight)",
    fig('PE@50', 'eventsPerSecond'),
    fig('T3WE@50', 'eventsPerSecond'),
    1.0,
    rateRatios('PE@50', 'T3WE@50'),
  );
  upTo(
    'delivered p50 at 50% load: serve (eager) < gateway + worker',
    fig('LE@50%', 'deliveredP50Ms'),
    fig('L@50%', 'deliveredP50Ms'),
    0.999,
  );
  upTo(
    'live delivered p99 during an import ≤ 2 × idle (25% load)',
    fig('LI', 'importingDeliveredP99Ms'),
    fig('LI', 'idleDeliveredP99Ms'),
    2,
  );
  // Temporal Cloud's billable actions (tools/bench/actions.ts): a happy-path payment is its start and
  // one workflow task of local activities, T3L's shape (SPEC.md, "What an event costs").
  // Issue 62: an ERP that allows 20 calls a second gets no more, and live events still go first.
  const pr = results.find((r) => r.id === 'PR')?.figures;
  goals.push({
    goal: 'a limited ERP: ≤ 1.1 × its limit a second, 0 × 429, each entry once (PR)',
    measured: pr
      ? `${pr.busiestSecondCalls} calls in the busiest second (limit ${pr.limitPerSecond}), ${pr.throttled} × 429, ` +
        `${pr.appliedTwice} applied twice, ${pr.undelivered} undelivered`
      : 'not measured',
    met: pr
      ? pr.busiestSecondCalls! <= 1.1 * pr.limitPerSecond! &&
        pr.throttled === 0 &&
        pr.appliedTwice === 0 &&
        pr.undelivered === 0
      : null,
  });
  upTo(
    'a limited ERP drains within 1.2 × events / limit (PR)',
    fig('PR', 'drainSeconds'),
    fig('PR', 'drainBoundSeconds'),
    1,
  );
  upTo(
    'live delivered p99 during an import to a limited ERP ≤ 2 × idle (PRL)',
    fig('PRL', 'importingDeliveredP99Ms'),
    fig('PRL', 'idleDeliveredP99Ms'),
    2,
  );
  // Temporal Cloud's billable actions (tools/bench/actions.ts): settle's happy path against its floor's shape.
  const actionsP = fig('P@50', 'actionsPerEvent');
  const actionsT3L = fig('T3L@50', 'actionsPerEvent');
  goals.push({
    goal: 'happy-path actions/event ≤ 2 (P@50)',
    measured:
      actionsP === undefined
        ? 'not measured'
        : `${actionsP} (T3L ${actionsT3L ?? 'not measured'}; $${fig('P@50', 'usdPerMillionEvents')} per M events at list)`,
    met: actionsP === undefined ? null : actionsP <= HAPPY_PATH_ACTIONS,
  });
  const actionsR = fig('R', 'actionsPerEvent');
  goals.push({
    goal: 'a redelivered duplicate costs no action (R)',
    measured: actionsR === undefined ? 'not measured' : `${actionsR} actions/event`,
    met: actionsR === undefined ? null : actionsR === 0,
  });
  upTo(
    'live delivered p99 during a retry storm ≤ 1.5 × idle (LS)',
    fig('LS', 'stormDeliveredP99Ms'),
    fig('LS', 'idleDeliveredP99Ms'),
    1.5,
  );
  const stormSent = fig('LS', 'stormSent');
  const stormDuplicates = fig('LS', 'stormDuplicates');
  goals.push({
    goal: `every retry-storm delivery 200 duplicate, no 5xx, no 503 (LS, ${STORM_FACTOR} × live)`,
    measured:
      stormSent === undefined
        ? 'not measured'
        : `${stormDuplicates} of ${stormSent} duplicate, ${fig('LS', 'storm5xx')} 5xx (${fig('LS', 'storm503')} 503) at ${fig('LS', 'stormPerSecond')}/s`,
    met: stormSent === undefined ? null : stormDuplicates === stormSent,
  });
  upTo(
    'live delivered p99 during a purge ≤ 1.5 × idle (RT)',
    fig('RT', 'purgingDeliveredP99Ms'),
    fig('RT', 'idleDeliveredP99Ms'),
    1.5,
  );
  upTo(
    'claim store after five fill-and-purge cycles ≤ 1.2 × after one (RT)',
    fig('RT', 'claimStoreMbAfterFiveCycles'),
    fig('RT', 'claimStoreMbAfterFirstCycle'),
    1.2,
  );
  const recoveryStarts = fig('RS', 'starts');
  goals.push({
    goal: `a recovery sweep over ${SIZE.recoveryListed} listed, ${RECOVERY_MISSED} missed, costs ≤ ${RECOVERY_MISSED} starts (RS)`,
    measured:
      recoveryStarts === undefined
        ? 'not measured'
        : `${recoveryStarts} starts, ${fig('RS', 'eventsPerSecond')} listed events/s`,
    met: recoveryStarts === undefined ? null : recoveryStarts <= RECOVERY_MISSED,
  });
  return goals;
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
    const cpu = classes.map((label) => byClass[label] ?? '-').join('/');
    rows.push([
      r.id,
      `${rate ?? '-'} /s${f.importLinesPerSecond ? ` (import ${f.importLinesPerSecond} lines/s)` : ''}`,
      pair(f.ackP50Ms, f.ackP99Ms),
      pair(f.commitP50Ms, f.commitP99Ms),
      cpu,
      `${r.resources.worker?.peakRssMb ?? '-'}/${r.resources['noop-worker']?.peakRssMb ?? '-'}`,
      f.actionsPerEvent === undefined
        ? ''
        : `${f.actionsPerEvent} ($${f.usdPerMillionEvents})${f.serverActionsPerEvent === undefined ? '' : `, server ${f.serverActionsPerEvent}`}`,
      f.bytesPerEvent === undefined ? '' : `${Math.round(f.bytesPerEvent)}`,
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  process.stdout.write(
    `\nsettle benchmarks, Temporal ${server === 'cluster' ? 'cluster (4 services)' : 'dev server'} (${machine.cpus} cores, load ${machine.loadAverage.before.join(' ')} → ${machine.loadAverage.after.join(' ')}, MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX})\n`,
  );
  for (const row of rows)
    process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);
  process.stdout.write('\ngoals (ctx: a context row, not a goal)\n');
  for (const goal of goals) {
    const mark = goal.context ? 'ctx ' : goal.met === null ? 'n/a ' : goal.met ? 'met ' : 'MISS';
    process.stdout.write(`  ${mark}  ${goal.goal.padEnd(58)} ${goal.measured}\n`);
  }
  process.stdout.write('\n');
}

function log(message: string) {
  process.stderr.write(`bench: ${message}\n`);
}

main().catch((error) => {
  // Keep what was measured before the failure.
  writeFileSync(
    join(__dirname, server === 'cluster' ? 'results-cluster.json' : 'results.json'),
    `${JSON.stringify({ partial: true, results }, null, 2)}\n`,
  );
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
