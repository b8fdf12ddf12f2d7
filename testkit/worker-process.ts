/**
 * A settle worker in a process of its own (`settle worker`'s runWorker, without its metrics endpoint,
 * purge Schedule, tracing and the check that every delivery target has a URL), so the benchmarks can measure its CPU and memory and the fault-injection suite
 * and the tests (test/support/child-worker.ts) can kill it. Reads the ordinary settle environment and
 * prints `worker ready` once it polls.
 *
 * SETTLE_TEST_TUNING=<JSON>: shorter delivery timeouts and leases (DeliveryTuning), for tests.
 *
 * SETTLE_CHAOS_PAUSE_AFTER_COMMIT=<prefix>: for events whose ID starts with the prefix, print
 * `committed` after the reconcile transaction commits and then hang, so the suite can kill the worker
 * between COMMIT and the activity's completion.
 *
 * SETTLE_BENCH_WORKER_CPU_PROFILE=<file> (set for `npm run bench`): a CPU profile of the worker's main
 * thread (activities, the SDK's bridge), written as a .cpuprofile when the worker drains.
 *
 * SETTLE_BENCH_WORKER_OPTIONS=<JSON>: SDK worker settings to try (maxCachedWorkflows, reuseV8Context,
 * workflowThreadPoolSize), e.g. '{"maxCachedWorkflows":50}'; the no-op worker takes the same.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadConfig } from '../src/config';
import { installShutdown } from '../src/lib/shutdown';
import { runWorker } from '../src/worker';
import { afterReconcileCommit } from './after-commit';
import { benchWorkerOptions } from './worker-options';

/** SETTLE_BENCH_WORKER_CPU_PROFILE=<file>: a CPU profile of the main thread, written when it drains. */
async function startProfile(): Promise<(() => Promise<void>) | undefined> {
  const file = process.env.SETTLE_BENCH_WORKER_CPU_PROFILE;
  if (!file) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
  };
}

async function main() {
  installShutdown();
  const stopProfile = await startProfile();
  const pausePrefix = process.env.SETTLE_CHAOS_PAUSE_AFTER_COMMIT;
  const tuning = process.env.SETTLE_TEST_TUNING ? JSON.parse(process.env.SETTLE_TEST_TUNING) : undefined;
  // SIGTERM drains, as `settle worker` does: the same role (src/worker.ts), without its metrics
  // endpoint, purge Schedule, tracing and its refusal to start without every delivery target.
  await runWorker(loadConfig(), {
    metrics: false,
    retention: false,
    tracing: false,
    requireTargets: false,
    tuning,
    sdkOptions: benchWorkerOptions(),
    interceptors: pausePrefix
      ? [
          afterReconcileCommit(async (eventId) => {
            if (!eventId.startsWith(pausePrefix)) return;
            process.stdout.write('committed\n');
            await new Promise(() => {});
          }),
        ]
      : [],
    onReady: () => process.stdout.write('worker ready\n'),
  });
  await stopProfile?.();
  process.stdout.write('worker drained\n');
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
