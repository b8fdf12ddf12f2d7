import { ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { paymentWorkflowId } from '../src/domain/ids';
import { deliveryTarget, downstreamIdempotencyKey, type OutboxTarget } from '../src/domain/outbox';
import { shortHash } from '../src/lib/hash';
import { sleep } from './processes';
import type { ProofStack } from './stack';
import type { Provider } from './provider';

/** What the checker reads: settle's database, Temporal and the downstream receiver's records. */
type CheckedStack = Pick<ProofStack, 'pool' | 'client' | 'receiver'>;

export type InvariantReport = {
  ok: boolean;
  failures: string[];
  figures: Record<string, number>;
};

/** Workflows already seen closed: not described again after later scenarios. */
const closedWorkflows = new Set<string>();

type EventState = {
  event_id: string;
  in_events: boolean;
  claims: number;
  outcome: string | null;
  pending_outbox: number;
};

async function eventStates(stack: CheckedStack, ids: string[]): Promise<Map<string, EventState>> {
  const { rows } = await stack.pool.query<EventState>(
    `SELECT id AS event_id,
            EXISTS (SELECT 1 FROM events e WHERE e.event_id = id) AS in_events,
            (SELECT count(*)::int FROM claims c WHERE c.event_id = id) AS claims,
            (SELECT outcome FROM claims c WHERE c.event_id = id) AS outcome,
            (SELECT count(*)::int FROM outbox o WHERE o.event_id = id AND o.status = 'pending') AS pending_outbox
       FROM unnest($1::text[]) AS id`,
    [ids],
  );
  return new Map(rows.map((row) => [row.event_id, row]));
}

async function workflowStatus(stack: CheckedStack, eventId: string): Promise<string> {
  try {
    return (await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    // Only Temporal out of reach is worth waiting on; anything else (a payload this client cannot
    // decode) is the answer, and would otherwise be waited on for the whole bound.
    if (isUnreachable(error)) return 'UNREACHABLE';
    throw error;
  }
}

/** gRPC UNAVAILABLE (14) or DEADLINE_EXCEEDED (4): the frontend restarting or out of reach. */
function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 14 || code === 4 || error instanceof ServiceError;
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/**
 * After a scenario, waits (up to `timeoutMs`) for every acknowledged event to finish, then proves:
 * 1. every acknowledged event completed (a claim with an outcome, no pending outbox row, its workflow
 *    closed as COMPLETED); 2. every event has exactly one claim, and every payment at most one capture;
 * 3. every idempotency key the receiver saw has exactly one applied effect if settle delivered it (none
 *    if settle recorded a refusal), one body for all its retries, and belongs to an effect settle owns;
 * 4. no acknowledged event is missing from settle's records.
 */
export async function checkInvariants(
  stack: CheckedStack,
  provider: Provider,
  options: { timeoutMs: number },
): Promise<InvariantReport> {
  const failures: string[] = [];
  const acknowledged = [...provider.acknowledged.values()].filter((ack) => !ack.body.includes('"ignored"'));
  const ids = acknowledged.map((ack) => ack.event.id);
  const started = Date.now();

  // 1. Wait for completion.
  let states = await eventStates(stack, ids);
  const statuses = new Map<string, string>();
  for (;;) {
    states = await eventStates(stack, ids);
    const unsettled = ids.filter((id) => {
      const state = states.get(id)!;
      return !state.claims || state.pending_outbox > 0;
    });
    const open = ids.filter((id) => !closedWorkflows.has(id) && !unsettled.includes(id));
    await inBatches(open, 20, async (id) => {
      const status = await workflowStatus(stack, id);
      statuses.set(id, status);
      if (status !== 'RUNNING' && status !== 'UNREACHABLE') closedWorkflows.add(id);
    });
    const running = open.filter((id) => !closedWorkflows.has(id));
    if ((!unsettled.length && !running.length) || Date.now() - started > options.timeoutMs) {
      for (const id of unsettled)
        failures.push(`event #${shortHash(id)} did not complete (claim or delivery pending)`);
      for (const id of running)
        failures.push(`a workflow is still ${statuses.get(id)} (event #${shortHash(id)})`);
      break;
    }
    await sleep(500);
  }
  for (const [id, status] of statuses) {
    if (status !== 'COMPLETED' && status !== 'RUNNING' && status !== 'UNREACHABLE') {
      failures.push(`workflow of event #${shortHash(id)} ended ${status}`);
    }
  }

  // 4. + 2. Every acknowledged event is known, with exactly one claim.
  for (const id of ids) {
    const state = states.get(id)!;
    if (!state.in_events)
      failures.push(`acknowledged event #${shortHash(id)} is missing from settle's events`);
    if (state.claims !== 1) failures.push(`event #${shortHash(id)} has ${state.claims} claims`);
  }
  const doubleCaptures = await stack.pool.query(
    `SELECT payment_id FROM ledger_entries WHERE kind = 'capture' GROUP BY payment_id HAVING count(*) > 1`,
  );
  if (doubleCaptures.rowCount)
    failures.push(`${doubleCaptures.rowCount} payments have more than one capture`);
  const orphanClaims = await stack.pool.query(
    `SELECT 1 FROM claims c WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = c.event_id)`,
  );

  // 3. Idempotency keys at the receiver.
  const { rows: outbox } = await stack.pool.query<{
    key: string;
    status: string;
    event_id: string;
    target: OutboxTarget;
  }>(`SELECT idempotency_key AS key, status, event_id, target FROM outbox`);
  const owned = new Set(outbox.map((row) => row.key));
  // A compensation undoes a row under its own key (its target's undo), derived like the others.
  for (const row of outbox) {
    const undo = deliveryTarget(row.target).undo;
    if (undo) owned.add(downstreamIdempotencyKey(row.event_id, row.target, undo.keyAction));
  }
  let repeatsRefused = 0;
  for (const row of outbox) {
    const record = stack.receiver.keys.get(row.key);
    const applied = record?.applied ?? 0;
    if ((row.status === 'delivered' || row.status === 'compensated') && applied !== 1) {
      failures.push(`a ${row.status} effect was applied ${applied} times downstream`);
    }
    if (row.status === 'failed' && applied !== 0) failures.push(`a refused effect was applied downstream`);
  }
  for (const [key, record] of stack.receiver.keys) {
    repeatsRefused += record.repeatsRefused;
    if (!owned.has(key)) failures.push(`the receiver saw an idempotency key settle does not own`);
    if (record.bodies.size !== 1)
      failures.push(`an idempotency key was sent with ${record.bodies.size} bodies`);
  }

  return {
    ok: failures.length === 0,
    failures: [...new Set(failures)],
    figures: {
      acknowledged: ids.length,
      claims: [...states.values()].reduce((sum, state) => sum + state.claims, 0),
      keys: stack.receiver.keys.size,
      repeatsRefusedByKey: repeatsRefused,
      orphanClaims: orphanClaims.rowCount ?? 0,
      checkMs: Date.now() - started,
    },
  };
}
