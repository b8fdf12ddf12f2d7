/**
 * `npx tsx tools/bench/workflow-run-cost.ts [--runs=1000] [--rounds=3]`: the worker's CPU per payment
 * run spent on workflow code, with and without the bundle's preloaded modules
 * (src/worker-runtime/workflow-bundle.ts), measured in one process on one machine, in turn.
 *
 * It replays the recorded history of a happy-path payment run in the current shape (the first pass,
 * encrypted payloads: test/histories/reconcile-and-deliver/payment-encrypted-applied-delivered.json)
 * `--runs` times through `Worker.runReplayHistories`. A replay creates each run in the SDK's reusable V8
 * context and drives it through its activations as a worker does, without Temporal, PostgreSQL or the
 * activities, so the figure is the workflow side alone: the SDK's per-run setup, settle's workflow
 * code, the payload codec. The bundle the worker runs is built twice, once as shipped and once with
 * `preloadModules` emptied, and the two alternate `--rounds` times, so that a minute of load falls on
 * both. Prints the process's CPU (all threads) per run for each, and how many promises a run creates
 * inside the sandbox: the SDK's promise hook captures a stack trace for each (its stack-trace query),
 * so each costs a run tens of microseconds.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promiseHooks } from 'node:v8';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { settleDataConverter } from '../../src/temporal/data-converter';
import { installTemporalRuntime } from '../../src/worker-runtime/create-worker';
import { bundleOptions } from '../../src/worker-runtime/workflow-bundle';

const HISTORIES = join(PROJECT_ROOT, 'test/histories');
const HISTORY = join(HISTORIES, 'reconcile-and-deliver/payment-encrypted-applied-delivered.json');

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const value = args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const parsed = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`--${name} must be a positive integer`);
  return parsed;
};
const runs = option('runs', 1000);
const rounds = option('rounds', 3);

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

/** CPU milliseconds per replayed run, all threads of this process. */
async function replay(codePath: string, count: number): Promise<number> {
  const histories = Array.from({ length: count }, (_, i) => ({ workflowId: `payment:cost-${i}`, history }));
  const before = process.cpuUsage();
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath }, dataConverter },
    histories,
  )) {
    if (result.error) throw new Error(`the replay of ${result.workflowId} failed: ${result.error.message}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / count;
}

async function main(): Promise<void> {
  installTemporalRuntime();
  const dir = mkdtempSync(join(tmpdir(), 'settle-run-cost-'));
  try {
    const options = bundleOptions({ encodedFailures: true, traced: false });
    const variants = [
      {
        name: 'preloaded (as shipped)',
        file: join(dir, 'preloaded.js'),
        preloadModules: options.preloadModules,
      },
      { name: 'loaded per run', file: join(dir, 'per-run.js'), preloadModules: [] },
    ];
    for (const variant of variants) {
      const { code } = await bundleWorkflowCode({ ...options, preloadModules: variant.preloadModules });
      writeFileSync(variant.file, code);
      await replay(variant.file, Math.min(50, runs)); // warm up: JIT, the codec's keys
    }
    const promisesPerRun = await sandboxPromisesPerRun(variants[0]!.file, 100);
    const figures = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const variant of variants) figures.get(variant.name)!.push(await replay(variant.file, runs));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    process.stdout.write(`workflow code's CPU per payment run, ${runs} replays × ${rounds} rounds in turn\n`);
    for (const [name, values] of figures) {
      process.stdout.write(
        `  ${name.padEnd(24)} median ${median(values).toFixed(2)} ms  (${values.map((v) => v.toFixed(2)).join(', ')})\n`,
      );
    }
    const [shipped, perRun] = variants.map((variant) => median(figures.get(variant.name)!));
    process.stdout.write(`  saved per run: ${(perRun! - shipped!).toFixed(2)} ms\n`);
    process.stdout.write(`  promises a run creates in the sandbox: ${promisesPerRun}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
