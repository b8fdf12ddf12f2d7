import { randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { relative } from 'node:path';
import { inspect } from 'node:util';
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { connectClient } from '../src/client';
import { loadConfig, type Config } from '../src/config';
import { createPool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import type { PaymentEvent } from '../src/domain/payment-event';
import { providerRouteOptions } from '../src/gateway/providers';
import { buildGateway } from '../src/gateway/server';
import { signWebhook } from '../src/lib/webhook-signature';
import { logger } from '../src/lib/logger';
import { createWorker } from '../src/worker-runtime/create-worker';
import type { ActivityDependencies } from '../src/activities';
import { afterReconcileCommit, type AfterCommit } from './after-commit';
import { startReceiver, type Behaviour, type Receiver } from './receiver';

export const TEMPORAL_ADDRESS = required('TEMPORAL_ADDRESS');
const ADMIN_URL = required('SETTLE_TEST_ADMIN_DATABASE_URL');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite with \`npm test\``);
  return value;
}

export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * A database of its own for one test file, migrated (`through`: only up to that migration file, as
 * an older settle left it; `blank`: not at all, for an older release's own `settle migrate`); dropped
 * by `drop()`.
 */
export async function createTestDatabase(
  options: { through?: string; blank?: boolean } = {},
): Promise<{ pool: pg.Pool; url: string; drop(): Promise<void> }> {
  const name = `settle_test_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString());
  if (!options.blank) await migrate(pool, options);
  return {
    pool,
    url: url.toString(),
    async drop() {
      await pool.end();
      const again = new pg.Client({ connectionString: ADMIN_URL });
      await again.connect();
      await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}

export type TestStack = {
  pool: pg.Pool;
  databaseUrl: string;
  client: Client;
  taskQueue: string;
  secret: string;
  apiToken: string;
  gatewayUrl: string;
  config: Config;
  /** Starts (again) a worker on this stack's task queue, with `afterCommit` injected when given. */
  startWorker(afterCommit?: AfterCommit): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
};

export type TestStackOptions = {
  /** Runs after each reconcile attempt commits (see ./after-commit.ts). */
  afterCommit?: AfterCommit;
  temporalAddress?: string;
  worker?: boolean;
  /** Secrets accepted besides `secret`, as during a rotation. */
  otherSecrets?: string[];
  /** Overrides, e.g. downstream URLs and the outbound secret. */
  config?: Partial<Config>;
  tuning?: ActivityDependencies['tuning'];
};

/** A database, a worker and a gateway on a fresh task queue of the shared Temporal dev server. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const db = await createTestDatabase();
  const temporalAddress = options.temporalAddress ?? TEMPORAL_ADDRESS;
  const taskQueue = `settle-test-${randomUUID()}`;
  const secret = newSecret();
  const apiToken = randomBytes(24).toString('hex');
  const config: Config = {
    // The defaults, as settle's own schema gives them.
    ...loadConfig({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress }, { temporal: 'dev-stack' }),
    taskQueue,
    port: 0,
    webhookSecrets: [secret, ...(options.otherSecrets ?? [])],
    apiToken,
    // Every downstream call is signed: a receiver verifies with stack.config.outboundSecret.
    outboundSecret: [newSecret()],
    // And every reminder, with a secret of its own: a receiver verifies with stack.config.reminderSecret.
    reminderSecret: [newSecret()],
    allowPrivateTargets: true,
    ...options.config,
  };
  const client = await connectClient(config);
  const gateway = buildGateway({
    pool: db.pool,
    client,
    taskQueue,
    webhookSecrets: config.webhookSecrets,
    ...providerRouteOptions(config),
    apiToken,
    logger,
    allowPrivateTargets: config.allowPrivateTargets,
    deliveryStuckAfterMs: config.deliveryStuckAfterMs,
  });
  await gateway.listen({ port: 0, host: '127.0.0.1' });
  const port = (gateway.server.address() as AddressInfo).port;

  let running: { stop(): Promise<void> } | undefined;
  const stack: TestStack = {
    pool: db.pool,
    databaseUrl: db.url,
    client,
    taskQueue,
    secret,
    apiToken,
    gatewayUrl: `http://127.0.0.1:${port}`,
    config,
    async startWorker(afterCommit) {
      const { worker, connection } = await createWorker({
        config,
        pool: db.pool,
        interceptors: afterCommit ? [afterReconcileCommit(afterCommit)] : [],
        tuning: options.tuning,
      });
      const done = worker.run();
      running = {
        async stop() {
          worker.shutdown();
          await done;
          await connection.close();
        },
      };
    },
    async stopWorker() {
      await running?.stop();
      running = undefined;
    },
    async close() {
      await stack.stopWorker();
      await gateway.close();
      await client.connection.close();
      await db.drop();
    },
  };
  if (options.worker !== false) await stack.startWorker(options.afterCommit);
  return stack;
}

/** A test stack whose carrier and ERP are recording receivers of its own, closed together. */
export type StackWithReceivers = {
  stack: TestStack;
  carrier: Receiver;
  erp: Receiver;
  close(): Promise<void>;
};

/**
 * Starts a carrier and an ERP receiver (each answering as its behaviour says) and a test stack that
 * delivers to them; `stack` adds to the stack's options. `close()` closes the stack, then the receivers.
 */
export async function startStackWithReceivers(
  options: { carrier?: Behaviour; erp?: Behaviour; stack?: TestStackOptions } = {},
): Promise<StackWithReceivers> {
  const carrier = await startReceiver(options.carrier);
  const erp = await startReceiver(options.erp).catch(async (error: unknown) => {
    await carrier.close();
    throw error;
  });
  const closeReceivers = async () => {
    await erp.close();
    await carrier.close();
  };
  const stack = await startTestStack({
    ...options.stack,
    config: { carrierUrl: carrier.url, erpUrl: erp.url, ...options.stack?.config },
  }).catch(async (error: unknown) => {
    await closeReceivers();
    throw error;
  });
  return {
    stack,
    carrier,
    erp,
    async close() {
      await stack.close();
      await closeReceivers();
    },
  };
}

let counter = 0;
/** A unique event ID per call, so tests sharing a server never collide. */
export function uniqueId(prefix = 'pay'): string {
  counter += 1;
  return `${prefix}_${randomBytes(4).toString('hex')}_${counter}`;
}

export function paymentEvent(
  overrides: {
    id?: string;
    type?: string;
    shipmentId?: string;
    paymentId?: string;
    amount?: number;
    createdAt?: string;
  } = {},
): PaymentEvent {
  return {
    id: overrides.id ?? uniqueId(),
    type: (overrides.type ?? 'payment.settled') as PaymentEvent['type'],
    created_at: overrides.createdAt ?? '2026-08-10T02:14:00Z',
    data: {
      shipment_id: overrides.shipmentId ?? 'SHP-4821',
      payment_id: overrides.paymentId ?? uniqueId('pi'),
      amount: overrides.amount ?? 12500,
      currency: 'EUR',
    },
  };
}

export type PostResult = { status: number; body: Record<string, unknown>; headers: Headers };

/** POSTs a body to the payment webhook, signed with `secret` unless headers say otherwise. */
export async function postWebhook(
  stack: Pick<TestStack, 'gatewayUrl' | 'secret'>,
  body: unknown,
  options: {
    rawBody?: string;
    headers?: Record<string, string>;
    secret?: string;
    at?: Date;
    method?: string;
  } = {},
): Promise<PostResult> {
  const raw = options.rawBody ?? JSON.stringify(body);
  const msgId = `msg_${randomBytes(6).toString('hex')}`;
  const signed = signWebhook(options.secret ?? stack.secret, msgId, raw, options.at);
  const response = await fetch(`${stack.gatewayUrl}/webhooks/payments`, {
    method: options.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...signed, ...options.headers },
    body: options.method === 'GET' ? undefined : raw,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
}

/**
 * The bound on a hang when a caller gives none: several times what one event's way through a worker,
 * or a CLI process's start, takes on a loaded shared machine.
 */
const DEFAULT_WAIT_MS = 300_000;

/**
 * Polls `probe` until it returns a truthy value (returned), or until `until(value)` holds when given
 * (then the probe returns what it observed, e.g. a count). A timeout is a bound on a hang, not on the
 * machine's speed: its message says how long it waited and what the probe saw last, so a failure
 * reads "timed out after 120 s waiting for 20 lines to be imported: last observed 12".
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs?: number,
): Promise<T>;
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T>,
  options: { until: (value: T) => boolean; timeoutMs?: number },
): Promise<T>;
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  options: number | { until?: (value: T) => boolean; timeoutMs?: number } = {},
): Promise<T> {
  const { until, timeoutMs = DEFAULT_WAIT_MS } =
    typeof options === 'number' ? { timeoutMs: options } : options;
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (until ? until(value as T) : value) {
      recordWait(what, Date.now() - started, timeoutMs);
      return value as T;
    }
    if (Date.now() - started > timeoutMs) {
      throw new Error(
        `timed out after ${((Date.now() - started) / 1000).toFixed(0)} s waiting for ${what}: ` +
          `last observed ${inspect(value, { depth: 2, breakLength: Infinity })}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Under `npm test`, each wait's duration against its bound goes to the runner's timings file, which
 * prints the waits that took more than a fifth of their bound (a bound must be 5x a loaded run's).
 */
function recordWait(what: string, ms: number, boundMs: number) {
  const timings = process.env.SETTLE_TEST_TIMINGS;
  if (!timings) return;
  const file = relative(process.cwd(), process.argv[1] ?? '');
  appendFileSync(timings, `${JSON.stringify({ wait: what, file, ms, boundMs })}\n`);
}

/** Rows the tests count to prove "one effect" and "nothing written". */
export async function countRows(
  pool: pg.Pool,
  table: 'events' | 'claims' | 'ledger_entries' | 'outbox',
  eventId: string,
): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]!.n;
}
