import pg from 'pg';
import { addShipments } from '../../../src/db/shipments';
import type { PaymentEvent } from '../../../src/domain/payment-event';
import { erpKey, makeEvent, newRunId, openLoop, shipmentFor } from '../../../testkit/load';
import { HANG_BOUND_MS, sleep, within } from '../../../testkit/processes';
import type { ProofStack } from '../../../testkit/stack';
import { pollUntil } from '../../../testkit/programs';
import type { Provider } from '../../../testkit/provider';

export type ScenarioContext = { stack: ProofStack; provider: Provider; short: boolean };
export type ScenarioResult = { figures: Record<string, number | string>; failures: string[] };
export type Scenario = {
  id: string;
  name: string;
  /** Run by the full form of `npm run chaos` only (too long for `--short`). */
  fullOnly?: boolean;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
};

/** `count` captured events for fresh held shipments; their IDs share the returned prefix. */
export async function freshEvents(
  stack: ProofStack,
  count: number,
): Promise<{ events: PaymentEvent[]; prefix: string }> {
  const runId = newRunId('c');
  await addShipments(
    stack.pool,
    Array.from({ length: count }, (_, i) => shipmentFor(runId, i)),
  );
  return { events: Array.from({ length: count }, (_, i) => makeEvent(runId, i)), prefix: `evt_${runId}_` };
}

/** Starts ordinary workers until `count` run. */
export async function ensureWorkers(stack: ProofStack, count: number): Promise<void> {
  while (stack.workers.length < count) await stack.startWorker();
}

/**
 * Delivers `events` with their shipment rows locked from another connection, so settle's reconcile
 * transactions stop mid-transaction (after the claim check, before COMMIT) until `release()`;
 * resolves once `events.length` transactions wait on the lock (or a hang's bound passed) with how many do.
 */
export async function deliverHeld(stack: ProofStack, provider: Provider, events: PaymentEvent[]) {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM shipments WHERE shipment_id = ANY($1::text[]) FOR UPDATE', [
    events.map((event) => event.data.shipment_id),
  ]);
  await Promise.all(events.map((event) => provider.deliver(event)));
  const deadline = Date.now() + HANG_BOUND_MS;
  let waiting: number;
  for (;;) {
    const { rows } = await stack.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    waiting = rows[0]!.n;
    if (waiting >= events.length || Date.now() > deadline) break;
    await sleep(100);
  }
  return {
    waiting,
    async release() {
      await client.query('ROLLBACK').catch(() => {});
      await client.end().catch(() => {});
    },
  };
}

/**
 * How long a scenario waits for delivery after a crash or an outage, a bound on a hang: a vanished
 * worker's local attempt is taken over after the 10 s workflow-task timeout, a durable reconcile
 * attempt (no heartbeat) only after its 30 s start-to-close, then backoff, and a loaded machine
 * restarts processes slowly.
 */
export const RECOVERY_TIMEOUT_MS = HANG_BOUND_MS;

/** What the receiver recorded for each idempotency key of one scenario's events. */
export function receiverRecords(stack: ProofStack, prefix: string) {
  return [...stack.receiver.keys].filter(([key]) => key.startsWith(prefix)).map(([, record]) => record);
}

/** Waits for each event's ERP entry (its last effect) at the receiver; resolves with how many arrived. */
export async function waitForDelivered(
  stack: ProofStack,
  events: PaymentEvent[],
  timeoutMs = RECOVERY_TIMEOUT_MS,
): Promise<number> {
  await within(
    Promise.all(events.map((event) => stack.receiver.waitForApplied(erpKey(event.id)))),
    timeoutMs,
    undefined,
  );
  return events.filter((event) => stack.receiver.keys.get(erpKey(event.id))?.applied === 1).length;
}

/**
 * After a fault: two workers running again and each event's ERP entry applied once; with `ledger`,
 * one ledger entry per event. Resolves with how many were delivered.
 */
export async function recovered(
  stack: ProofStack,
  events: PaymentEvent[],
  check: (condition: boolean, message: string) => void,
  { ledger = true } = {},
): Promise<number> {
  await ensureWorkers(stack, 2);
  const delivered = await waitForDelivered(stack, events);
  check(delivered === events.length, `${delivered} of ${events.length} delivered`);
  if (ledger)
    check((await countWhere(stack, 'ledger_entries', events)) === events.length, 'ledger entries ≠ events');
  return delivered;
}

/** Delivers `events` at `rate` per second for `ms` (open arrivals); resolves with how many were sent. */
export const deliverAtRate = (provider: Provider, events: PaymentEvent[], rate: number, ms: number) =>
  openLoop(rate, ms, (i) => provider.deliver(events[i]!).then(() => {}), events.length);

export async function countWhere(
  stack: ProofStack,
  table: 'claims' | 'events' | 'ledger_entries',
  events: PaymentEvent[],
) {
  const { rows } = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE event_id = ANY($1::text[])`,
    [events.map((event) => event.id)],
  );
  return rows[0]!.n;
}

export { failureList } from '../../../testkit/checks';

/** Waits until PostgreSQL answers on the driver's pool again. */
export const waitForPostgres = (stack: ProofStack) =>
  pollUntil(
    'PostgreSQL to answer',
    () =>
      stack.pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    Boolean,
    HANG_BOUND_MS,
  );
