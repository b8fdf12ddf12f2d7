/**
 * T3W's plain consumer: what a team would run instead of settle, doing P's work with three
 * plain local activities, receiver and worker in one process. Its receiver takes the payment webhook
 * (POST /webhooks/payments, Standard Webhooks signature, SETTLE_WEBHOOK_SECRETS), checks the fields
 * it reads and starts `plainConsumerWorkflow` with the event's ID as the workflow ID: 202 once Temporal
 * has it, 200 when Temporal already had that ID. The worker (the no-op worker's SDK settings, on its
 * own task queue) runs plain-consumer-workflows.ts. Prints `plain consumer ready <url>` once both run.
 * SETTLE_BENCH_PLAIN_EAGER=1 starts on the worker's own connection with eager dispatch, as `settle serve`
 * does (row T3WE, against PE): each run's first task comes back to this process's worker in the start's
 * answer instead of through matching.
 * Not a product: it has none of settle's event store, outbox, compensation, encryption or views.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import pg from 'pg';
import type { PaymentEvent } from '../../../src/domain/payment-event';
import { paymentStartSearchAttributes, paymentSummary } from '../../../src/workflows/search-attributes';
import { createSignatureVerifier } from '../../../src/lib/webhook-signature';
import { installTemporalRuntime } from '../../../src/worker-runtime/create-worker';
import { benchWorkerOptions } from '../../../testkit/worker-options';
import {
  PLAIN_CONSUMER_SCHEMA,
  plainConsumerActivities,
  type PlainConsumerEvent,
} from './plain-consumer-activities';

export const PLAIN_CONSUMER_TASK_QUEUE = 'bench-plain-consumer';
const MAX_BODY_BYTES = 256 * 1024;

/**
 * SETTLE_BENCH_PLAIN_VIEW, to measure what the operator view of SPEC.md costs Temporal: `start` gives
 * each run what settle's payment runs carry from their start (its search attributes, its static
 * summary, a memo of the mark's size); `full` also what settle's happy-path runs add on the server (a
 * patch marker with its TemporalChangeVersion upsert). The bench's T3W and T3WE rows run `full`.
 */
const VIEW = process.env.SETTLE_BENCH_PLAIN_VIEW ?? '';
if (!['', 'start', 'full'].includes(VIEW)) throw new Error('SETTLE_BENCH_PLAIN_VIEW must be start or full');
const EAGER = process.env.SETTLE_BENCH_PLAIN_EAGER === '1';

function settleStartOptions(event: PlainConsumerEvent) {
  const like = event as unknown as PaymentEvent;
  return {
    typedSearchAttributes: paymentStartSearchAttributes(like),
    staticSummary: paymentSummary(like),
    memo: { mark: createHash('sha256').update(event.id).digest('hex') },
  };
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function isEvent(value: unknown): value is PlainConsumerEvent {
  const event = value as PlainConsumerEvent;
  return (
    typeof event?.id === 'string' &&
    typeof event.type === 'string' &&
    typeof event.data?.shipment_id === 'string' &&
    typeof event.data.payment_id === 'string' &&
    Number.isInteger(event.data.amount) &&
    typeof event.data.currency === 'string'
  );
}

async function main() {
  installTemporalRuntime();
  const address = env('TEMPORAL_ADDRESS');
  const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
  await pool.query(PLAIN_CONSUMER_SCHEMA);
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: PLAIN_CONSUMER_TASK_QUEUE,
    workflowsPath: require.resolve('./plain-consumer-workflows'),
    activities: plainConsumerActivities({
      pool,
      carrierUrl: env('SETTLE_CARRIER_URL'),
      erpUrl: env('SETTLE_ERP_URL'),
      secret: env('SETTLE_OUTBOUND_SECRET'),
    }),
    ...benchWorkerOptions(),
  });
  // Eager dispatch needs the start to go out on the connection this process's worker polls with.
  const client = new Client({
    connection: EAGER ? connection : await Connection.connect({ address }),
    namespace: 'default',
  });
  const verify = createSignatureVerifier(env('SETTLE_WEBHOOK_SECRETS').split(','));

  const server = createServer((request, response) => {
    const answer = (status: number, body: object) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || request.url !== '/webhooks/payments') return answer(404, {});
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      if (!verify(raw, request.headers).ok) return answer(401, { error: 'invalid_signature' });
      let event: unknown;
      try {
        event = JSON.parse(raw);
      } catch {
        return answer(400, { error: 'invalid_json' });
      }
      if (!isEvent(event)) return answer(422, { error: 'invalid_event' });
      client.workflow
        .start('plainConsumerWorkflow', {
          taskQueue: PLAIN_CONSUMER_TASK_QUEUE,
          workflowId: `plain:${event.id}`,
          args: [event, VIEW === 'full'],
          requestEagerStart: EAGER,
          ...(VIEW ? settleStartOptions(event) : {}),
        })
        .then(
          () => answer(202, { status: 'accepted' }),
          (error: unknown) =>
            error instanceof WorkflowExecutionAlreadyStartedError
              ? answer(200, { status: 'duplicate' })
              : answer(503, { error: 'temporal_unavailable' }),
        );
    });
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', resolve));

  const running = worker.run();
  // SIGTERM drains and exits normally (so --cpu-prof can write its profiles), as the no-op worker does.
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    worker.shutdown();
  });
  process.stdout.write(`plain consumer ready http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  try {
    await running;
  } finally {
    if (!EAGER) await client.connection.close();
    await connection.close();
    await pool.end();
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
