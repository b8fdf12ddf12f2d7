/**
 * The T0 worker: the same SDK, runtime and worker defaults as settle's, polling its own task queue
 * (SETTLE_TASK_QUEUE) with a no-op workflow and a no-op activity. Prints `worker ready` once it polls.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { installTemporalRuntime } from '../../../src/worker-runtime/create-worker';
import { noopActivities } from './noop-activities';
import { benchWorkerOptions } from '../../../testkit/worker-options';

async function main() {
  installTemporalRuntime();
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: process.env.SETTLE_TASK_QUEUE!,
    workflowsPath: require.resolve('./noop-workflows'),
    activities: noopActivities,
    ...benchWorkerOptions(),
  });
  const running = worker.run();
  // SIGTERM drains and exits normally (so --cpu-prof can write its profiles), as settle's worker does.
  process.once('SIGTERM', () => worker.shutdown());
  process.stdout.write('worker ready\n');
  try {
    await running;
  } finally {
    await connection.close();
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
