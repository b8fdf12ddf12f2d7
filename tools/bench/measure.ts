import { setTimeout as sleep } from 'node:timers/promises';
import type { TemporalCluster } from '../../testkit/cluster';
import { median } from '../../testkit/load';
import { ResourceSampler, round, type Usage } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import { actionsPerEvent } from './actions';
import type { BenchContext, Figures, Rep, Result, Row, RowSpec, Size } from './context';

type Measuring = Pick<BenchContext, 'row' | 'measure' | 'measureInTurn'>;
type Pids = () => Record<string, number | 'self' | undefined>;

/** The measuring helpers of a run on `stack`: each summary is pushed to `results` and logged. */
export function measuring(
  stack: ProofStack,
  size: Size,
  results: Result[],
  pids: Pids,
  log: (line: string) => void,
): Measuring {
  const row = <F extends Figures, P = undefined>(id: string, what: string, spec: RowSpec<F, P>): Row => ({
    id,
    what,
    reps: spec.reps ?? size.reps,
    once: async (rep) => {
      const prepared = (await spec.prepare?.(rep)) as P;
      // On the cluster, the server's own count of the actions too (before and after the run).
      const before = spec.workflowIds && stack.cluster ? await settledActions(stack.cluster) : undefined;
      const sampler = new ResourceSampler(pids, ['worker', 'worker-2', 'noop-worker']);
      const startedAt = new Date();
      const figures = await spec.run(prepared, rep);
      const usage = sampler.stop();
      const events = typeof spec.events === 'number' ? spec.events : spec.events(figures);
      const runs = spec.workflowIds?.(prepared, figures, startedAt);
      const counted = runs ? await actionsPerEvent(stack.client, runs.ids, { since: runs.since }) : {};
      let server = {};
      if (before !== undefined && stack.cluster) {
        const counted = serverActions(before, await settledActions(stack.cluster), events);
        log(`   the server's action counter, per event: ${counted.byType}`);
        server = { serverActionsPerEvent: round(counted.total, 2) };
      }
      return { figures: { ...figures, ...counted, ...server }, usage, events };
    },
  });

  const summarise = (measured: Row, reps: Rep[]): Result => {
    const runs = reps.map((rep) => rep.figures);
    const events = reps.reduce((sum, rep) => sum + rep.events, 0);
    const figures: Figures = {};
    for (const key of Object.keys(runs[0]!)) figures[key] = round(median(runs.map((r) => r[key]!)), 1);
    const resources = perEvent(sumUsage(reps.map((rep) => rep.usage)), events);
    const result = { id: measured.id, what: measured.what, figures, runs, resources };
    results.push(result);
    log(
      `${measured.id}: ${Object.entries(figures)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
    log(`   CPU ms/event: ${cpuLine(resources)}`);
    for (const name of ['worker', 'noop-worker']) {
      const threads = resources[name]?.threads;
      if (!threads || (resources[name]?.cpuMsPerEvent ?? 0) < 1) continue;
      const top = Object.entries(threads)
        .sort(([, a], [, b]) => b - a)
        .slice(0, 5)
        .map(([thread, seconds]) => `${thread} ${round((seconds * 1000) / events, 1)}`);
      log(`   ${name} threads, CPU ms/event: ${top.join(', ')}`);
    }
    return result;
  };

  const measureInTurn = async (rows: Row[]): Promise<Result[]> => {
    const reps = rows.map((): Rep[] => []);
    // Rows in turn are compared pair by pair: never fewer repetitions than the pairs' median needs.
    const count = (row: Row) => (rows.length > 1 ? Math.max(row.reps, size.turnReps) : row.reps);
    const most = Math.max(0, ...rows.map(count));
    for (let rep = 0; rep < most; rep += 1) {
      for (const [index, measured] of rows.entries()) {
        if (rep >= count(measured)) continue;
        const turn = rows.length > 1 ? ', in turn' : '';
        log(`${measured.id}: ${measured.what} (repetition ${rep + 1} of ${count(measured)}${turn})`);
        reps[index]!.push(await measured.once(rep));
      }
    }
    return rows.map((measured, index) => summarise(measured, reps[index]!));
  };

  return {
    row,
    measureInTurn,
    measure: async (id, what, spec) => (await measureInTurn([row(id, what, spec)]))[0]!,
  };
}

/** Sums the usage of several sampled windows (one per repetition): CPU adds up, RSS is the peak. */
export function sumUsage(windows: Record<string, Usage>[]): Record<string, Usage> {
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
export function perEvent(resources: Record<string, Usage>, events: number): Record<string, Usage> {
  for (const usage of Object.values(resources))
    usage.cpuMsPerEvent = round((usage.cpuSeconds * 1000) / Math.max(events, 1), 2);
  return resources;
}

/**
 * The process classes of the CPU-per-event columns: `worker` is settle's worker, or both of PR and
 * PRL's summed; `temporal` the dev server, or the four services of a cluster summed; `temporal-pg`
 * the cluster's own PostgreSQL; `pg` settle's PostgreSQL (postmaster and backends); `bench` the load
 * generator with its downstream receiver, and `settle import` where a row runs it (I, LI, PR, PRL).
 */
export const CPU_CLASSES: [string, (name: string) => boolean][] = [
  ['gateway', (name) => name === 'gateway'],
  ['worker', (name) => name === 'worker' || name === 'worker-2'],
  ['serve', (name) => name === 'serve'],
  ['noop', (name) => name === 'noop-worker'],
  ['plain', (name) => name === 'plain-consumer'],
  ['temporal', (name) => name.startsWith('temporal') && name !== 'temporal-postgres'],
  ['temporal-pg', (name) => name === 'temporal-postgres'],
  ['pg', (name) => name === 'postgres'],
  ['bench', (name) => name === 'bench'],
];

export function cpuByClass(resources: Record<string, Usage>): Record<string, number | undefined> {
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
 * What the server counted between two reads, per event: its total (beside the histories' count by
 * Temporal Cloud's rules: docs/capacity.md, "Temporal actions") and each type's count for the log.
 */
function serverActions(before: Map<string, number>, after: Map<string, number>, events: number) {
  const byType = [...after]
    .map(([type, n]) => [type, (n - (before.get(type) ?? 0)) / events] as const)
    .filter(([, n]) => n > 0);
  const total = byType.reduce((sum, [, n]) => sum + n, 0);
  return { total, byType: byType.map(([type, n]) => `${type} ${round(n, 2)}`).join(', ') };
}
