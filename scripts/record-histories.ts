/**
 * `npm run record-histories`: runs each payment workflow scenario on a real Temporal dev server and
 * PostgreSQL and writes its event history to test/histories/. test/replay-histories.test.ts replays
 * them against the current workflow code, so a change that breaks determinism fails the build.
 * Re-record only for a change that is meant to be incompatible and before anything is deployed;
 * otherwise keep the old histories and guard the change with workflow.patched().
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, WorkflowIdReusePolicy } from '@temporalio/client';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentEvent } from '../src/domain/payment-event';
import { freePort } from '../src/lib/free-port';
import { startEmbeddedPostgres } from '../src/stack/embedded-postgres';
import { findTemporalCli } from '../src/stack/temporal-binaries';
import { startTemporalDevServer } from '../src/stack/temporal-dev-server';
import { createWorker } from '../src/worker';

const run = promisify(execFile);
const OUT_DIR = join(__dirname, '..', 'test', 'histories');

function event(
  id: string,
  type: PaymentEvent['type'],
  shipmentId: string,
  paymentId: string,
  amount = 12500,
): PaymentEvent {
  return {
    id,
    type,
    created_at: '2026-08-10T02:14:00Z',
    data: { shipment_id: shipmentId, payment_id: paymentId, amount, currency: 'EUR' },
  };
}

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'settle-record-'));
  const database = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
  const cliPath = await findTemporalCli();
  const temporal = await startTemporalDevServer({ cliPath, port: await freePort() });
  const pool = createPool(database.urlFor('postgres'));
  const taskQueue = `record-${randomUUID()}`;
  let failedOnce = false;
  try {
    await migrate(pool);
    await addShipments(pool, ['SHP-REC-1', 'SHP-REC-2']);
    const { worker, connection } = await createWorker({
      config: { temporalAddress: temporal.address, temporalNamespace: 'default', taskQueue },
      pool,
      hooks: {
        // One scenario loses the activity's completion after COMMIT, as a crashed worker would.
        afterCommit: (eventId, attempt) => {
          if (eventId === 'pay_rec_lost_ack' && attempt === 1 && !failedOnce) {
            failedOnce = true;
            throw new Error('injected: completion lost after commit');
          }
        },
      },
    });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    const scenarios: [string, PaymentEvent, WorkflowIdReusePolicy?][] = [
      ['applied', event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1')],
      ['stale', event('pay_rec_stale', 'payment.authorized', 'SHP-REC-1', 'pi_rec_1')],
      ['unmatched', event('pay_rec_unmatched', 'payment.captured', 'SHP-REC-MISSING', 'pi_rec_x')],
      [
        'claim-existed',
        event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1'),
        WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      ],
      [
        'conflict',
        event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1', 1),
        WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      ],
      ['lost-ack-retried', event('pay_rec_lost_ack', 'payment.captured', 'SHP-REC-2', 'pi_rec_2')],
    ];
    mkdirSync(OUT_DIR, { recursive: true });
    await worker.runUntil(async () => {
      for (const [name, payment, reusePolicy] of scenarios) {
        const handle = await client.workflow.start('paymentWorkflow', {
          taskQueue,
          workflowId: paymentWorkflowId(payment.id),
          args: [{ event: payment }],
          workflowIdReusePolicy: reusePolicy ?? WorkflowIdReusePolicy.REJECT_DUPLICATE,
        });
        await handle.result().catch(() => undefined);
        // The CLI writes the proto3 JSON form that the SDK's replayer reads back.
        const { stdout } = await run(cliPath, [
          'workflow',
          'show',
          '--address',
          temporal.address,
          '--workflow-id',
          handle.workflowId,
          '--run-id',
          handle.firstExecutionRunId,
          '--output',
          'json',
        ]);
        const history = JSON.parse(stdout) as { events: unknown[] };
        writeFileSync(join(OUT_DIR, `payment-${name}.json`), `${JSON.stringify(history, null, 2)}\n`);
        process.stdout.write(`recorded payment-${name}.json (${history.events.length} events)\n`);
      }
    });
    await connection.close();
    await client.connection.close();
  } finally {
    await pool.end();
    await temporal.stop();
    await database.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
