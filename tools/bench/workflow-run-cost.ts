/**
 * `npx tsx tools/bench/workflow-run-cost.ts [--runs=1000] [--rounds=3] [--traced]`: the worker's CPU per
 * payment run spent on workflow code, with and without the bundle's preloaded modules
 * (src/worker-runtime/workflow-bundle.ts), measured in one process on one machine, in turn.
 *
 * It replays the recorded history of a happy-path payment run in the current shape (the first pass,
 * encrypted payloads: test/histories/payment-encrypted-applied-delivered.json)
 * `--runs` times through `Worker.runReplayHistories`. A replay creates each run in the SDK's reusable V8
 * context and drives it through its activations as a worker does, without Temporal, PostgreSQL or the
 * activities, so the figure is the workflow side alone: the SDK's per-run setup, settle's workflow
 * code, the payload codec. The bundle the worker runs is built twice, once as shipped and once with
 * `preloadModules` emptied, and the two alternate `--rounds` times, so that a minute of load falls on
 * both. Prints the process's CPU (all threads) per run for each, and how many promises a run creates
 * inside the sandbox: the SDK's promise hook captures a stack trace for each (its stack-trace query),
 * so each costs a run tens of microseconds.
 *
 * A third variant replays the shipped bundle with the SDK's deadlock detector taken out, to price it:
 * the SDK enters the sandbox through `vm.Script#runInContext` with a `timeout` (WorkerOptions'
 * isolateExecutionTimeout), and for each such call Node starts and joins a watchdog thread. Only in this
 * tool, only while that variant replays, the calls run without the option; the tool prints how many
 * such calls a run makes and what they cost. settle's worker keeps the detector (docs/performance.md,
 * "The levers, and what they cost").
 *
 * `--traced` compares the bundles of a worker with tracing on instead: untraced as shipped, traced as
 * shipped (settle's workflow tracing interceptors, preloaded), and traced with Temporal's OpenTelemetry
 * workflow interceptors (@temporalio/interceptors-opentelemetry, evaluated for every run: what a traced
 * worker ran before). A replay creates every span; only the export, which the SDK skips while
 * replaying, is left out.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promiseHooks } from 'node:v8';
import vm from 'node:vm';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker, type BundleOptions } from '@temporalio/worker';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { settleDataConverter } from '../../src/temporal/data-converter';
import { REPLAY_SPAN_SINKS } from '../../src/tracing/tracing';
import { installTemporalRuntime } from '../../src/worker-runtime/create-worker';
import { bundleOptions } from '../../src/worker-runtime/workflow-bundle';
import { median } from '../../testkit/load';
import { positiveIntegerOption } from './support/options';

const HISTORIES = join(PROJECT_ROOT, 'test/histories');
const HISTORY = join(HISTORIES, 'payment-encrypted-applied-delivered.json');

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => positiveIntegerOption(args, name, fallback);
const runs = option('runs', 1000);
const rounds = option('rounds', 3);
const traced = args.includes('--traced');

const keys = parsePayloadKeys(readFileSync(join(HISTORIES, 'payload-keys.txt'), 'utf8'));
if ('problem' in keys) throw new Error(`test/histories/payload-keys.txt: ${keys.problem}`);
const dataConverter = settleDataConverter({ payloadKeys: keys.keys });
const history = JSON.parse(readFileSync(HISTORY, 'utf8')) as unknown;

/**
 * Promises created inside a run's sandbox: the SDK's own hook, installed with the first workflow,
 * runs first and tags each with its run's ID.
 */
async function sandboxPromisesPerRun(codePath: string, count: number): Promise<number> {
  let created = 0;
  const stop = promiseHooks.onInit((promise) => {
    if ((promise as { runId?: unknown }).runId !== undefined) created += 1;
  });
  try {
    await replay(codePath, count);
  } finally {
    stop();
  }
  return created / count;
}

/**
 * Calls into the sandbox that asked for a `timeout` (a watchdog thread each), counted while `watchdog` is
 * on; while it is off, the same calls run without the option. The replayer calls in this thread.
 */
const sandboxCalls = { timed: 0, watchdog: true };
const runInContext = vm.Script.prototype.runInContext;
vm.Script.prototype.runInContext = function (this: vm.Script, context, options) {
  if (options?.timeout === undefined) return runInContext.call(this, context, options);
  sandboxCalls.timed += 1;
  if (sandboxCalls.watchdog) return runInContext.call(this, context, options);
  return runInContext.call(this, context, { ...options, timeout: undefined });
};

/** CPU milliseconds per replayed run, all threads of this process. */
async function replay(codePath: string, count: number, watchdog = true): Promise<number> {
  const histories = Array.from({ length: count }, (_, i) => ({ workflowId: `payment:cost-${i}`, history }));
  sandboxCalls.watchdog = watchdog;
  const before = process.cpuUsage();
  try {
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath }, dataConverter, sinks: REPLAY_SPAN_SINKS },
      histories,
    )) {
      if (result.error) throw new Error(`the replay of ${result.workflowId} failed: ${result.error.message}`);
    }
  } finally {
    sandboxCalls.watchdog = true;
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / count;
}

type Variant = { name: string; file: string; watchdog?: boolean };

/** Bundles the workflow code with `options` into DIR/NAME. */
async function writeBundle(dir: string, name: string, options: BundleOptions): Promise<string> {
  const file = join(dir, name);
  writeFileSync(file, (await bundleWorkflowCode(options)).code);
  return file;
}

/**
 * Warms each variant up (JIT, the codec's keys), replays them `rounds` times in turn, prints each one's
 * CPU per run and returns the medians, in the variants' order.
 */
async function inTurn(variants: Variant[]): Promise<number[]> {
  for (const variant of variants) await replay(variant.file, Math.min(50, runs), variant.watchdog);
  const figures = variants.map(() => [] as number[]);
  for (let round = 0; round < rounds; round += 1) {
    for (const [index, variant] of variants.entries()) {
      figures[index]!.push(await replay(variant.file, runs, variant.watchdog));
    }
  }
  process.stdout.write(`workflow code's CPU per payment run, ${runs} replays × ${rounds} rounds in turn\n`);
  for (const [index, values] of figures.entries()) {
    process.stdout.write(
      `  ${variants[index]!.name.padEnd(24)} median ${median(values).toFixed(2)} ms  (${values.map((v) => v.toFixed(2)).join(', ')})\n`,
    );
  }
  return figures.map(median);
}

/** The untraced bundle and the two traced ones. */
async function tracedVariants(dir: string): Promise<void> {
  const shipped = bundleOptions({ encodedFailures: true, traced: true });
  await inTurn([
    {
      name: 'untraced',
      file: await writeBundle(dir, 'untraced.js', bundleOptions({ encodedFailures: true, traced: false })),
    },
    { name: 'traced (as shipped)', file: await writeBundle(dir, 'traced.js', shipped) },
    {
      name: "traced, Temporal's",
      file: await writeBundle(dir, 'temporal.js', {
        ...shipped,
        preloadModules: shipped.preloadModules!.slice(0, 1),
        workflowInterceptorModules: [
          require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
        ],
      }),
    },
  ]);
}

/** Preloading on and off, and the shipped bundle without the SDK's watchdog. */
async function preloadAndWatchdog(dir: string): Promise<void> {
  const options = bundleOptions({ encodedFailures: true, traced: false });
  // Two bundles: as shipped, and with `preloadModules` emptied; the third variant reuses the first.
  const shipped = await writeBundle(dir, 'preloaded.js', options);
  const [asShipped, perRun, noWatchdog] = await inTurn([
    { name: 'preloaded (as shipped)', file: shipped },
    {
      name: 'loaded per run',
      file: await writeBundle(dir, 'per-run.js', { ...options, preloadModules: [] }),
    },
    { name: 'shipped, no watchdog', file: shipped, watchdog: false },
  ]);
  // One replay of 100 runs gives both counts: the promises a run creates and its timed calls.
  const timedBefore = sandboxCalls.timed;
  const promisesPerRun = await sandboxPromisesPerRun(shipped, 100);
  const timedCallsPerRun = (sandboxCalls.timed - timedBefore) / 100;
  process.stdout.write(`  saved per run by preloading: ${(perRun! - asShipped!).toFixed(2)} ms\n`);
  process.stdout.write(`  promises a run creates in the sandbox: ${promisesPerRun}\n`);
  process.stdout.write(
    `  the SDK's deadlock detector: ${timedCallsPerRun} timed calls into the sandbox per run, ` +
      `${(asShipped! - noWatchdog!).toFixed(2)} ms per run (Node ${process.versions.node})\n`,
  );
}

async function main(): Promise<void> {
  installTemporalRuntime();
  const dir = mkdtempSync(join(tmpdir(), 'settle-run-cost-'));
  try {
    await (traced ? tracedVariants(dir) : preloadAndWatchdog(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
