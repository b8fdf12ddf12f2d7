/**
 * `npx tsx tools/bench/run-shape-cost.ts [--runs=1000] [--rounds=3] [--in-flight=20]`: what each part of
 * a payment run's shape costs the Temporal dev server, with no settle code around it.
 *
 * One process starts a dev server (as the bench does), a worker with the workflows of
 * tools/bench/support/run-shape-workflows.ts, and a client on the worker's connection that starts runs
 * eagerly, as `settle serve` does. Each variant adds one part of what a payment run carries to a run that
 * does nothing: the start's operator view (settle's four search attributes, a summary, a memo the size
 * of settle's mark), the patch of the run's shape, the closing upsert, a local activity, a 1 KB input and
 * result. Two more start through matching, as `settle gateway` and T3L's load generator do: a payment
 * run's whole shape, and T3L's run (three local activities). `--rounds` times, every variant starts `--runs` runs, `--in-flight` at a time, each awaited to
 * its result, in turn so that a minute of load falls on all of them. Prints, per variant, the median of
 * the server's CPU per run (utime + stime of its process, from /proc), this process's (client and
 * worker), and the rate. A diagnostic for docs/performance.md, not a goal: the rate of each variant moves
 * the server's fixed costs per run a little.
 */
import { readFileSync } from 'node:fs';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { startTemporalDevServer } from '../../src/stack/temporal-dev-server';
import { findTemporalCli } from '../../src/stack/temporal-binaries';
import { RUN_MARK_MEMO } from '../../src/temporal/run-mark';
import { paymentStartSearchAttributes, paymentSummary } from '../../src/workflows/search-attributes';
import { freePort } from '../../testkit/free-port';
import { median } from '../../testkit/load';
import { positiveIntegerOption } from './support/options';
import { runShapeActivities } from './support/run-shape-activities';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => positiveIntegerOption(args, name, fallback);
const runs = option('runs', 1000);
const rounds = option('rounds', 3);
const inFlight = option('in-flight', 20);

type Variant = { name: string; workflowType: string; view?: boolean; input?: boolean; eager?: false };

const VARIANTS: Variant[] = [
  { name: 'an empty run, through matching', workflowType: 'emptyRun', eager: false },
  { name: 'an empty run', workflowType: 'emptyRun' },
  { name: "+ the start's view", workflowType: 'emptyRun', view: true },
  { name: '+ view, the patch', workflowType: 'patchRun', view: true },
  { name: '+ view, the closing upsert', workflowType: 'upsertRun', view: true },
  { name: '+ view, patch and upsert', workflowType: 'patchAndUpsertRun', view: true },
  { name: '+ a local activity', workflowType: 'localActivityRun' },
  { name: '+ a local activity, 1 KB in and out', workflowType: 'localActivityRun', input: true },
  { name: "a payment run's shape (all of them)", workflowType: 'paymentShapedRun', view: true, input: true },
  {
    name: "a payment run's shape, through matching",
    workflowType: 'paymentShapedRun',
    view: true,
    input: true,
    eager: false,
  },
  { name: "T3L's run, through matching", workflowType: 'threeLocalActivitiesRun', eager: false },
];

/** A payment event as the door starts a run with (its view is made from it). */
const EVENT: PaymentEvent = {
  id: 'evt_run_shape_cost',
  type: 'payment.settled',
  created_at: '2026-08-10T02:14:00Z',
  data: { shipment_id: 'SHP-4821', payment_id: 'pi_3PqRsT', amount: 12500, currency: 'EUR' },
};
/** A mark as long as settle's (an HMAC-SHA256 in hex, temporal/run-mark.ts). */
const MARK = 'a'.repeat(64);
/** About what the door hands a run: the event with the fields a provider adds. */
const INPUT = { event: EVENT, extra: 'e'.repeat(800) };

function cpuMs(pid: number): number {
  // Fields after "(comm) ": state is [0], so utime is [11] and stime [12], in USER_HZ (100) ticks.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startTemporalDevServer({ cliPath: await findTemporalCli(), port: await freePort() });
  const connection = await NativeConnection.connect({ address: server.address });
  try {
    const client = new Client({ connection });
    const taskQueue = 'run-shape-cost';
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowsPath: require.resolve('./support/run-shape-workflows'),
      activities: runShapeActivities,
    });
    const serverPid = server.process.pid!;
    let sequence = 0;
    const startRuns = async (variant: Variant, count: number) => {
      const server0 = cpuMs(serverPid);
      const self0 = process.cpuUsage();
      const started = Date.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(inFlight, count) }, async () => {
          while (next++ < count) {
            const handle = await client.workflow.start(variant.workflowType, {
              taskQueue,
              workflowId: `run-shape-cost-${(sequence += 1)}`,
              args: variant.input ? [INPUT] : [],
              requestEagerStart: variant.eager ?? true,
              ...(variant.view
                ? {
                    typedSearchAttributes: paymentStartSearchAttributes(EVENT),
                    staticSummary: paymentSummary(EVENT),
                    memo: { [RUN_MARK_MEMO]: MARK },
                  }
                : {}),
            });
            await handle.result();
          }
        }),
      );
      const self = process.cpuUsage(self0);
      return {
        server: (cpuMs(serverPid) - server0) / count,
        self: (self.user + self.system) / 1000 / count,
        rate: count / ((Date.now() - started) / 1000),
      };
    };
    await worker.runUntil(async () => {
      for (const variant of VARIANTS) await startRuns(variant, Math.min(100, runs));
      const figures = VARIANTS.map(() => [] as { server: number; self: number; rate: number }[]);
      for (let round = 0; round < rounds; round += 1) {
        for (const [index, variant] of VARIANTS.entries())
          figures[index]!.push(await startRuns(variant, runs));
      }
      process.stdout.write(
        `\nCPU per run, ${runs} runs × ${rounds} rounds in turn, ${inFlight} in flight, medians\n\n` +
          '| variant | the dev server, ms per run | client and worker, ms per run | runs/s |\n' +
          '| --- | --: | --: | --: |\n',
      );
      for (const [index, variant] of VARIANTS.entries()) {
        const of = (pick: (figure: { server: number; self: number; rate: number }) => number) =>
          median(figures[index]!.map(pick));
        process.stdout.write(
          `| ${variant.name} | ${of((f) => f.server).toFixed(2)} | ${of((f) => f.self).toFixed(2)} | ${of((f) => f.rate).toFixed(1)} |\n`,
        );
      }
    });
  } finally {
    await connection.close();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
