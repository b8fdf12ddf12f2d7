import { spawn, type ChildProcess } from 'node:child_process';
import type { DeliveryTuning } from '../../src/activities';
import type { TestStack } from '../../testkit/harness';
import { WORKER_PROCESS } from '../../testkit/processes';

export type ChildWorker = { process: ChildProcess; kill(): Promise<void> };

/** Starts testkit/worker-process.ts on the stack's database and task queue; resolves once it polls. */
export async function startChildWorker(
  stack: TestStack,
  env: Record<string, string | undefined> = {},
  tuning: Partial<DeliveryTuning> = {},
): Promise<ChildWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER_PROCESS], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.config.temporalAddress,
      SETTLE_TASK_QUEUE: stack.taskQueue,
      // Signs the carrier and ERP calls as the stack's own worker does.
      SETTLE_OUTBOUND_SECRET: stack.config.outboundSecret.join(','),
      // And the reminders with theirs.
      SETTLE_REMINDER_SECRET: stack.config.reminderSecret.join(','),
      SETTLE_TEST_TUNING: JSON.stringify(tuning),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('worker ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the worker process exited early (${code})`)));
  });
  return {
    process: child,
    /** SIGKILL: no drain, no completion reported, exactly like a machine that vanished. */
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
