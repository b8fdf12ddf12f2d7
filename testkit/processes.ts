import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../src/lib/paths';

/**
 * The bound on a hang for every wait of the proof suites (a process start, a delivery after a fault, a
 * provider's retries): never a measure of the machine's speed, so generous enough for a worker's start
 * on a loaded shared machine; `npm test`'s harness uses the same bound.
 */
export const HANG_BOUND_MS = 300_000;

/** The worker process the stacks start (settle's worker, with the test interceptor): a path for `node --import tsx`. */
export const WORKER_PROCESS = join(__dirname, 'worker-process.ts');

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on every Linux settle runs on). */
const TICKS_PER_SECOND = 100;

export type Child = {
  name: string;
  process: ChildProcess;
  pid: number;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  /** Lines the process printed on stdout so far (it prints no event IDs: logs hash them). */
  output(): string;
  /** The end of what it printed on stderr. */
  errors(): string;
  /** SIGKILL, as a vanished machine; resolves once it is gone. */
  kill(): Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. */
  stop(graceMs?: number): Promise<number | string>;
};

/**
 * Runs a TypeScript entry point (a path under the project root, plus arguments) in a Node process of
 * its own, so it can be measured, killed and restarted. Resolves once `ready(output)` is true.
 */
export async function spawnTs(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (output: string) => boolean | Promise<boolean>,
  timeoutMs = HANG_BOUND_MS,
): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out = (out + chunk.toString()).slice(-20_000)));
  child.stderr!.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-4_000)));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;
  const handle = childHandle(
    name,
    child,
    exited,
    () => out,
    () => err,
  );
  const deadline = Date.now() + timeoutMs;
  while (!(await ready(out))) {
    if (!alive()) throw new Error(`${name} exited before it was ready:\n${err.trim()}`);
    if (Date.now() > deadline) {
      await handle.kill();
      throw new Error(`${name} was not ready within ${timeoutMs} ms:\n${err.trim()}`);
    }
    await sleep(100);
  }
  return handle;
}

/** The Child of a spawned process: its output as `output`/`errors` read it, kill and stop. */
export function childHandle(
  name: string,
  child: ChildProcess,
  exited: Promise<number | string>,
  output: () => string,
  errors: () => string,
): Child {
  const alive = () => child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  return {
    name,
    process: child,
    pid: child.pid ?? -1,
    exited,
    output,
    errors,
    async kill() {
      if (alive()) child.kill('SIGKILL');
      return exited;
    },
    async stop(graceMs = 15_000) {
      if (alive()) child.kill('SIGTERM');
      const timer = setTimeout(() => alive() && child.kill('SIGKILL'), graceMs);
      const how = await exited;
      clearTimeout(timer);
      return how;
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The stop path's bound on a wait (src/lib/shutdown.ts), for the proof suites' waits too. */
export { within } from '../src/lib/shutdown';

type ProcStat = {
  pid: number;
  ppid: number;
  /** utime + stime of the process (all its threads) and cutime + cstime of its reaped children. */
  cpuSeconds: number;
  rssBytes: number;
  /** Exited, not yet reaped: its CPU is about to move into its parent's cutime. */
  zombie: boolean;
};

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm) ", which may itself contain spaces and parentheses: state is [0], ppid
    // [1], utime [11], stime [12], cutime [13], cstime [14], rss (pages) [21].
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    const cpuTicks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    const rssPages = Number(fields[21]);
    return {
      pid,
      ppid,
      cpuSeconds: cpuTicks / TICKS_PER_SECOND,
      rssBytes: rssPages * 4096,
      zombie: fields[0] === 'Z',
    };
  } catch {
    return undefined;
  }
}

/** Every process on the machine, read once (one pass over /proc per sample, whatever the targets). */
function snapshot(): ProcStat[] {
  const all: ProcStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat) all.push(stat);
  }
  return all;
}

/** The pids of a process and all its descendants (PostgreSQL: the postmaster and its backends). */
function treeOf(all: ProcStat[], rootPid: number): Set<number> {
  const inTree = new Set([rootPid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const stat of all) {
      if (!inTree.has(stat.pid) && inTree.has(stat.ppid)) {
        inTree.add(stat.pid);
        grew = true;
      }
    }
  }
  return inTree;
}

export type Usage = {
  /** CPU time used during the measurement, as a share of one core (100 = one core busy). */
  cpuPercent: number;
  cpuSeconds: number;
  /** The wall time sampled. */
  seconds: number;
  /** CPU milliseconds per event (or workflow, or transaction) of the row, when it counts them. */
  cpuMsPerEvent?: number;
  /** Highest resident set seen (summed over the process tree), sampled every 250 ms. */
  peakRssMb: number;
  /**
   * For the processes named in `threadsOf`: CPU seconds by thread, `main` (the JavaScript main
   * thread), and the others by their name in /proc: `node (busiest)` is the SDK's workflow thread
   * (a Node worker thread), `node (others)` V8's GC and compiler helpers and libuv's pool,
   * `tokio-runtime-w` the SDK's Rust core.
   */
  threads?: Record<string, number>;
};

/** CPU seconds of each thread of a process, grouped by thread name (`main` for the main thread). */
function threadCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = Number(tid) === pid ? 'main' : text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      byName.set(name, (byName.get(name) ?? 0) + seconds);
      // Several threads share a name (Node's worker threads and V8's helpers are all `node`).
      byName.set(`${name}#${tid}`, seconds);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/**
 * What one target's process tree used since the first reading, from successive readings of its CPU
 * total. The total of one process only grows: a reading below the last one with the same root pid is
 * a pass over /proc that missed a child as it exited (ResourceSampler.read retries those, up to a
 * bound), and is dropped. A new root pid is the target restarted (a killed worker started again): the
 * old process's CPU is kept, and the new one's counts from its start.
 */
export class TreeCpu {
  private first: number | undefined;
  private last = 0;
  private pid: number | undefined;
  private lost = 0;

  observe(pid: number, cpu: number): void {
    if (this.first === undefined) {
      [this.first, this.last, this.pid] = [cpu, cpu, pid];
    } else if (pid !== this.pid) {
      this.lost += this.last;
      [this.last, this.pid] = [cpu, pid];
    } else if (cpu >= this.last) {
      this.last = cpu;
    }
  }

  /** CPU seconds used between the first reading and the last one kept. */
  used(): number {
    return this.first === undefined ? 0 : this.last + this.lost - this.first;
  }
}

/**
 * Samples the CPU time and resident memory of named process trees while a benchmark runs. CPU is
 * the difference of /proc/<pid>/stat times (utime + stime of every process of the tree, plus the
 * cutime + cstime of the children they reaped, so a PostgreSQL backend that exited mid-window still
 * counts); RSS the highest sample. A `pid` of `self` is this process (the load generator and the
 * receiver) with the children it spawned that are not targets of their own (`settle import`, the
 * UI server). For PostgreSQL the RSS sum counts shared buffers once per process: an upper bound.
 */
export class ResourceSampler {
  private readonly peak = new Map<string, number>();
  private readonly started = Date.now();
  private timer: NodeJS.Timeout;
  private readonly cpu = new Map<string, TreeCpu>();

  private readonly startThreads = new Map<string, Map<string, number>>();

  constructor(
    private readonly targets: () => Record<string, number | 'self' | undefined>,
    private readonly threadsOf: string[] = [],
  ) {
    for (const name of threadsOf) {
      const pid = this.targets()[name];
      if (typeof pid === 'number') this.startThreads.set(name, threadCpu(pid));
    }
    this.sample();
    this.timer = setInterval(() => this.sample(), 250);
  }

  /**
   * CPU seconds and RSS of every target's tree, from one pass over /proc. A pass is not atomic: a
   * child that exits while it runs can be missed (read after it was gone, its parent read before it
   * reaped it) or counted twice (read, then reaped into its parent's cutime before the parent was
   * read). A pass that saw a tree member as a zombie, or after which one is gone, is made again.
   */
  private read(): Record<string, { pid: number; cpu: number; rss: number }> {
    for (let pass = 1; ; pass += 1) {
      const all = snapshot();
      const byPid = new Map(all.map((stat) => [stat.pid, stat]));
      const trees = new Map<string, { pid: number; tree: Set<number> }>();
      for (const [name, target] of Object.entries(this.targets())) {
        if (target === undefined) continue;
        const pid = target === 'self' ? process.pid : target;
        trees.set(name, { pid, tree: treeOf(all, pid) });
      }
      const members = [...trees.values()].flatMap(({ tree }) => [...tree]);
      const settled = members.every((pid) => byPid.get(pid)?.zombie !== true && existsSync(`/proc/${pid}`));
      if (!settled && pass < 20) continue;
      const out: Record<string, { pid: number; cpu: number; rss: number }> = {};
      for (const [name, { pid, tree }] of trees) {
        let pids = [...tree];
        if (this.targets()[name] === 'self') {
          const others = new Set(
            [...trees].filter(([other]) => other !== name).flatMap(([, { tree: t }]) => [...t]),
          );
          pids = pids.filter((member) => !others.has(member));
        }
        const stats = pids.flatMap((member) => byPid.get(member) ?? []);
        out[name] = {
          pid,
          cpu: stats.reduce((sum, stat) => sum + stat.cpuSeconds, 0),
          rss: stats.reduce((sum, stat) => sum + stat.rssBytes, 0),
        };
      }
      return out;
    }
  }

  private sample() {
    for (const [name, { pid, cpu, rss }] of Object.entries(this.read())) {
      this.peak.set(name, Math.max(this.peak.get(name) ?? 0, rss));
      let counter = this.cpu.get(name);
      if (!counter) this.cpu.set(name, (counter = new TreeCpu()));
      counter.observe(pid, cpu);
    }
  }

  stop(): Record<string, Usage> {
    this.sample();
    clearInterval(this.timer);
    const seconds = Math.max((Date.now() - this.started) / 1000, 0.001);
    const usage: Record<string, Usage> = {};
    for (const [name, counter] of this.cpu) {
      const cpuSeconds = counter.used();
      usage[name] = {
        cpuSeconds: round(cpuSeconds, 2),
        seconds: round(seconds, 2),
        cpuPercent: round((cpuSeconds / seconds) * 100, 0),
        peakRssMb: round((this.peak.get(name) ?? 0) / 1024 / 1024, 0),
      };
      const pid = this.targets()[name];
      const before = this.startThreads.get(name);
      if (before && typeof pid === 'number') {
        const threads: Record<string, number> = {};
        const busiest = new Map<string, number>();
        for (const [thread, seconds] of threadCpu(pid)) {
          const used = seconds - (before.get(thread) ?? 0);
          const [name, tid] = thread.split('#');
          if (tid === undefined) threads[thread] = round(used, 2);
          else busiest.set(name!, Math.max(busiest.get(name!) ?? 0, used));
        }
        // The busiest `node` thread of a worker is the SDK's workflow thread.
        const node = busiest.get('node');
        if (node !== undefined && threads.node !== undefined && node < threads.node) {
          threads['node (busiest)'] = round(node, 2);
          threads['node (others)'] = round(threads.node - node, 2);
          delete threads.node;
        }
        usage[name]!.threads = threads;
      }
    }
    return usage;
  }
}

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export const PROJECT_FILE = (path: string) => join(PROJECT_ROOT, path);

/** Resident memory of a process and all its descendants, in MB, now. */
export function treeRssMb(pid: number): number {
  const all = snapshot();
  const tree = treeOf(all, pid);
  return all.filter((stat) => tree.has(stat.pid)).reduce((sum, stat) => sum + stat.rssBytes, 0) / 1024 / 1024;
}
