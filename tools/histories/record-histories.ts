/**
 * `npm run record-histories`: runs each workflow scenario on a real Temporal dev server and
 * PostgreSQL, with local downstream receivers, and writes its event history to test/histories/.
 * test/replay-histories.test.ts replays them against the current workflow code, so a change that
 * breaks determinism fails the build. Before a version is deployed, re-record freely; after, guard a
 * change in the commands a workflow emits with workflow.patched() and move the old histories into a
 * subfolder named for the change (the patch's ID) first: they keep replaying its old branch, and
 * test/replay-histories.test.ts checks that none carries its marker. Then re-record.
 *
 * `payment-encrypted-*` runs with payload encryption on, under the fixture key of
 * test/histories/payload-keys.txt (made on the first recording, then kept). `--only=<name>[,<name>…]`
 * records those histories and leaves the others as they are.
 *
 * `*-invalid-input` are runs started around settle, as someone with reach to Temporal's frontend
 * would: an input that is not what settle starts the workflow with.
 *
 * `payment-traced-applied-delivered` runs with tracing on (a worker with the traced bundle, a client
 * whose start carries the trace's header), its spans exported to a local sink that keeps nothing: a
 * run started traced must replay untraced, and the reverse, since tracing is configuration.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { parsePayloadKeys, type PayloadKey } from '../../src/config/payload-keys';
import { startPaymentWorkflow } from '../../src/client';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { runMarkKey } from '../../src/app/run-marks';
import { insertAdmittedEvent } from '../../src/db/events';
import { addShipments } from '../../src/db/shipments';
import { paymentWorkflowId, reminderWorkflowId } from '../../src/domain/ids';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { buildGateway } from '../../src/gateway/server';
import { freePort } from '../../testkit/free-port';
import { payloadSha256 } from '../../src/lib/hash';
import { logger } from '../../src/lib/logger';
import { startEmbeddedPostgres } from '../../src/stack/embedded-postgres';
import { findTemporalCli } from '../../src/stack/temporal-binaries';
import { startTemporalDevServer } from '../../src/stack/temporal-dev-server';
import { settleDataConverter } from '../../src/temporal/data-converter';
import { activeTracing, startTracing, stopTracing } from '../../src/tracing/tracing';
import { createWorker } from '../../src/worker-runtime/create-worker';
import { afterReconcileCommit } from '../../testkit/after-commit';
import { startStripeApi } from '../../testkit/stripe-api';
import { listenLocally } from '../../testkit/local-server';
import { runMain } from '../../testkit/checks';

const run = promisify(execFile);
/** SETTLE_HISTORIES_DIR records elsewhere, e.g. a subfolder for a patched path beside the current one. */
const OUT_DIR = process.env.SETTLE_HISTORIES_DIR ?? join(__dirname, '..', '..', 'test', 'histories');
/** The fixture key the encrypted histories are written under (test/replay-histories.test.ts reads it). */
const KEYS_FILE = join(__dirname, '..', '..', 'test', 'histories', 'payload-keys.txt');
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (name: string) => only === undefined || only.includes(name);

function fixtureKeys(): PayloadKey[] {
  if (!existsSync(KEYS_FILE)) {
    writeFileSync(KEYS_FILE, `fixture-1:${randomBytes(32).toString('base64')}\n`);
  }
  const parsed = parsePayloadKeys(readFileSync(KEYS_FILE, 'utf8'));
  if ('problem' in parsed) throw new Error(`${KEYS_FILE}: ${parsed.problem}`);
  return parsed.keys;
}

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

/** A downstream API that answers `status(body)`; only what the scenarios need. */
const receiver = (status: (body: string) => number) =>
  listenLocally((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () =>
      response.writeHead(status(body), { 'content-type': 'application/json' }).end('{}'),
    );
  });

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'settle-record-'));
  const database = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
  const cliPath = await findTemporalCli();
  const temporal = await startTemporalDevServer({ cliPath, port: await freePort() });
  const pool = createPool(database.urlFor('postgres'));
  const taskQueue = `record-${randomUUID()}`;
  const apiToken = randomBytes(16).toString('hex');
  // The carrier answers 500 to one payment's first two release attempts: a retrying run.
  let retryRefusals = 0;
  const carrier = await receiver((body) =>
    body.includes('pi_rec_retry') && body.includes('release_hold') && retryRefusals++ < 2 ? 500 : 200,
  );
  // The ERP refuses one payment for good, which drives the saga's compensation.
  const erp = await receiver((body) => (body.includes('pi_rec_saga') ? 422 : 200));
  const customer = await receiver((body) => (body.includes('gone') ? 410 : 200));
  // Where the traced run's spans go: it answers 200 and keeps nothing.
  const spanSink = await receiver(() => 200);
  // Stripe's events API, for the recovery sweep: one capture its webhook never delivered.
  const stripeApi = await startStripeApi();
  stripeApi.add({
    id: 'evt_rec_recovered',
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000) - 60,
    type: 'payment_intent.succeeded',
    livemode: false,
    pending_webhooks: 1,
    data: {
      object: {
        id: 'pi_rec_recovered',
        object: 'payment_intent',
        amount: 12500,
        amount_received: 12500,
        currency: 'eur',
        metadata: { shipment_id: 'SHP-REC-RECOVERED' },
      },
    },
  });
  /** What every recording worker is configured with: its task queue, the downstream receivers. */
  const workerConfig = (queue: string) => ({
    temporalAddress: temporal.address,
    temporalNamespace: 'default',
    taskQueue: queue,
    carrierUrl: carrier.url,
    erpUrl: erp.url,
    outboundSecret: [`whsec_${randomBytes(24).toString('base64')}`],
    // The reminders' own secret: without it a reminder's delivery waits for one (not_configured).
    reminderSecret: [`whsec_${randomBytes(24).toString('base64')}`],
    allowPrivateTargets: true,
  });
  let failedOnce = false;
  try {
    await migrate(pool);
    await addShipments(pool, ['SHP-REC-1', 'SHP-REC-2', 'SHP-REC-3', 'SHP-REC-4', 'SHP-REC-5', 'SHP-REC-6']);
    const { worker, connection } = await createWorker({
      config: {
        ...workerConfig(taskQueue),
        // Registers the purge activity (the purge-completed scenario).
        claimRetentionMs: 90 * 24 * 3_600_000,
        // The recovery sweep's source (the recovery-sweep-completed scenario).
        stripeApiKey: stripeApi.apiKey,
        stripeApiBase: stripeApi.url,
      },
      pool,
      interceptors: [
        // One scenario loses the activity's completion after COMMIT, as a crashed worker would.
        afterReconcileCommit((eventId, attempt) => {
          if (eventId === 'pay_rec_lost_ack' && attempt === 1 && !failedOnce) {
            failedOnce = true;
            throw new Error('injected: completion lost after commit');
          }
        }),
      ],
    });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    // The same code with payload encryption on: its own worker, task queue and client.
    const payloadKeys = fixtureKeys();
    const encrypted = await createWorker({
      config: {
        ...workerConfig(`${taskQueue}-encrypted`),
        payloadKeys,
      },
      pool,
    });
    const encryptedClient = new Client({
      connection: client.connection,
      dataConverter: settleDataConverter({ payloadKeys }),
    });
    const gateway = buildGateway({
      pool,
      client,
      taskQueue,
      webhookSecrets: [],
      apiToken,
      logger,
      allowPrivateTargets: true,
    });
    await gateway.listen({ port: 0, host: '127.0.0.1' });
    const gatewayUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;

    const payments: [string, PaymentEvent, 'ALLOW_DUPLICATE'?][] = [
      ['applied-delivered', event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1')],
      ['stale', event('pay_rec_stale', 'payment.authorized', 'SHP-REC-1', 'pi_rec_1')],
      ['unmatched', event('pay_rec_unmatched', 'payment.captured', 'SHP-REC-MISSING', 'pi_rec_x')],
      [
        'claim-existed',
        event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1'),
        'ALLOW_DUPLICATE',
      ],
      [
        'conflict',
        event('pay_rec_applied', 'payment.settled', 'SHP-REC-1', 'pi_rec_1', 1),
        'ALLOW_DUPLICATE',
      ],
      ['lost-ack-retried', event('pay_rec_lost_ack', 'payment.captured', 'SHP-REC-2', 'pi_rec_2')],
      ['saga-compensated', event('pay_rec_saga', 'payment.settled', 'SHP-REC-3', 'pi_rec_saga')],
      ['delivery-retried', event('pay_rec_retry', 'payment.settled', 'SHP-REC-4', 'pi_rec_retry')],
      // Started around settle: its event was never stored, so the reconcile refuses it.
      ['unadmitted', event('pay_rec_unadmitted', 'payment.settled', 'SHP-REC-2', 'pi_rec_unadmitted')],
    ];
    /** Stores the event as settle's door does before it starts the run (the reconcile checks it). */
    const admit = (payment: PaymentEvent) =>
      insertAdmittedEvent(pool, {
        eventId: payment.id,
        type: payment.type,
        payload: payment,
        payloadSha256: payloadSha256(payment),
        workflowId: paymentWorkflowId(payment.id),
        source: 'webhook',
      });
    const reminders: [string, { body: Record<string, unknown>; cancel?: boolean }][] = [
      ['delivered', { body: { webhook_url: `${customer.url}/hooks/renewal`, payload: { ok: true } } }],
      ['gone', { body: { webhook_url: `${customer.url}/hooks/gone`, payload: { gone: true } } }],
      ['cancelled', { body: { webhook_url: `${customer.url}/hooks/renewal`, payload: {} }, cancel: true }],
    ];

    // Only this version's histories are re-recorded; those in subfolders keep older versions replaying.
    mkdirSync(OUT_DIR, { recursive: true });
    for (const name of readdirSync(OUT_DIR).filter((n) => n.endsWith('.json'))) {
      if (wanted(name.replace(/\.json$/, ''))) rmSync(join(OUT_DIR, name));
    }
    const save = async (name: string, handle: WorkflowHandle) => {
      await handle.result().catch(() => undefined);
      const { runId } = await handle.describe();
      // The CLI writes the proto3 JSON form that the SDK's replayer reads back.
      const { stdout } = await run(cliPath, [
        'workflow',
        'show',
        '--address',
        temporal.address,
        '--workflow-id',
        handle.workflowId,
        '--run-id',
        runId,
        '--output',
        'json',
      ]);
      // Stack traces are left out: they name the recording machine's files, and replay reads none.
      const history = JSON.parse(stdout, (key, value: unknown) =>
        key === 'stackTrace' ? undefined : value,
      ) as {
        events: unknown[];
      };
      writeFileSync(join(OUT_DIR, `${name}.json`), `${JSON.stringify(history, null, 2)}\n`);
      process.stdout.write(`recorded ${name}.json (${history.events.length} events)\n`);
    };

    await worker.runUntil(async () => {
      // Run (and shut down) even when not wanted, so that its connection can close.
      await encrypted.worker.runUntil(async () => {
        if (wanted('payment-encrypted-applied-delivered')) {
          const marked = event('pay_rec_encrypted', 'payment.settled', 'SHP-REC-5', 'pi_rec_5');
          const withExtra = { ...marked, data: { ...marked.data, customer_email: 'jane.doe@example.com' } };
          await admit(withExtra);
          const started = await startPaymentWorkflow(encryptedClient, `${taskQueue}-encrypted`, withExtra, {
            markKey: await runMarkKey(pool),
            runs: pool,
          });
          if (!started.started) throw new Error('payment encrypted-applied-delivered: not started');
          await save(
            'payment-encrypted-applied-delivered',
            encryptedClient.workflow.getHandle(started.workflowId, started.runId),
          );
        }
      });
      for (const [name, payment, reusePolicy] of payments) {
        if (!wanted(`payment-${name}`)) continue;
        if (name !== 'unadmitted') await admit(payment);
        // As the gateway and replay start them: search attributes and summary included.
        const started = await startPaymentWorkflow(client, taskQueue, payment, {
          markKey: await runMarkKey(pool),
          runs: pool,
          reusePolicy,
        });
        if (!started.started) throw new Error(`payment ${name}: not started`);
        await save(`payment-${name}`, client.workflow.getHandle(started.workflowId, started.runId));
      }
      if (wanted('purge-completed')) {
        // The daily purge as its Schedule starts it (here directly), with nothing past retention.
        const handle = await client.workflow.start('purgeClaimsWorkflow', {
          taskQueue,
          workflowId: `settle-purge-claims:${taskQueue}`,
        });
        await save('purge-completed', handle);
      }
      if (wanted('recovery-sweep-completed')) {
        // The Stripe recovery sweep as its Schedule starts it (here directly): one event recovered.
        const handle = await client.workflow.start('recoverySweepWorkflow', {
          taskQueue,
          workflowId: `settle-recovery-sweep:stripe:${taskQueue}`,
          args: [{ provider: 'stripe' }],
        });
        await save('recovery-sweep-completed', handle);
      }
      for (const [name, { body, cancel }] of reminders) {
        if (!wanted(`reminder-${name}`)) continue;
        const deliveryId = `renewal-rec-${name}`;
        const dueAt = new Date(Date.now() + (cancel ? 3_600_000 : 1_000)).toISOString();
        const headers = {
          authorization: `Bearer ${apiToken}`,
          'idempotency-key': deliveryId,
          'content-type': 'application/json',
        };
        const created = await fetch(`${gatewayUrl}/reminders`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ contract_id: 'CT-REC', due_at: dueAt, ...body }),
        });
        if (created.status !== 202)
          throw new Error(`reminder ${name}: ${created.status} ${await created.text()}`);
        if (cancel) await fetch(`${gatewayUrl}/reminders/${deliveryId}`, { method: 'DELETE', headers });
        await save(`reminder-${name}`, client.workflow.getHandle(reminderWorkflowId(deliveryId)));
      }
      const invalidRuns: [string, string, string, unknown[]][] = [
        ['payment-invalid-input', 'paymentWorkflow', paymentWorkflowId('pay_rec_invalid'), [{}]],
        [
          'reminder-invalid-input',
          'reminderWorkflow',
          reminderWorkflowId('renewal-rec-invalid'),
          [{ deliveryId: 'renewal-rec-invalid', dueAt: 'soon' }],
        ],
      ];
      for (const [name, workflowType, workflowId, args] of invalidRuns) {
        if (!wanted(name)) continue;
        await save(name, await client.workflow.start(workflowType, { taskQueue, workflowId, args }));
      }
    });
    // The same code with tracing on, its spans sent to spanSink. Last, as tracing is on for the whole
    // process once started (the exporter reads the environment).
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = spanSink.url;
    process.env.OTEL_TRACES_SAMPLER = 'always_on';
    if (!(await startTracing('record-histories'))) throw new Error('tracing did not start');
    const traced = await createWorker({ config: workerConfig(`${taskQueue}-traced`), pool });
    const tracedClient = new Client({
      connection: client.connection,
      interceptors: { workflow: activeTracing()?.workflowClientInterceptors ?? [] },
    });
    await traced.worker.runUntil(async () => {
      if (wanted('payment-traced-applied-delivered')) {
        const payment = event('pay_rec_traced', 'payment.settled', 'SHP-REC-6', 'pi_rec_6');
        await admit(payment);
        const started = await startPaymentWorkflow(tracedClient, `${taskQueue}-traced`, payment, {
          markKey: await runMarkKey(pool),
          runs: pool,
        });
        if (!started.started) throw new Error('payment traced-applied-delivered: not started');
        await save(
          'payment-traced-applied-delivered',
          tracedClient.workflow.getHandle(started.workflowId, started.runId),
        );
      }
    });
    await gateway.close();
    await encrypted.connection.close();
    await traced.connection.close();
    await stopTracing();
    await connection.close();
    await client.connection.close();
    process.stdout.write(
      `${readdirSync(OUT_DIR).filter((n) => n.endsWith('.json')).length} histories in ${OUT_DIR}\n`,
    );
  } finally {
    for (const server of [carrier, erp, customer, spanSink]) await server.close();
    await stripeApi.close();
    await pool.end();
    await temporal.stop();
    await database.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

runMain('record-histories', main, { stack: true });
