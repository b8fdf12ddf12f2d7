import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { startPaymentWorkflow } from '../client';
import { findEventHash, insertAdmittedEvent, type EventSource } from '../db/events';
import { recordConflict, recordRedelivery } from '../db/repeats';
import { recordStartOutcomeUnknown } from '../db/start-outcomes';
import { withTransaction } from '../db/transaction';
import { classifyDatabaseFailure, isTransientConflict } from '../domain/errors';
import { paymentWorkflowId } from '../domain/ids';
import { isHandledPaymentType, type FieldIssue, type PaymentEvent } from '../domain/payment-event';
import { payloadSha256 } from '../lib/hash';
import { startOutcomeUnknownTotal } from '../metrics/settle-metrics';
import { recordDisplacedRuns, runMarkKey } from './run-marks';
import { annotateSpan } from '../tracing/tracing';
import type { Services } from './services';
import { GrpcStatus } from '../temporal/grpc-status';

export type IngestOutcome =
  | { status: 'accepted'; eventId: string; workflowId: string; runId: string }
  | { status: 'duplicate'; eventId: string; workflowId: string }
  | { status: 'ignored'; eventId: string }
  | { status: 'conflict'; eventId: string }
  /** PostgreSQL refused a value of the event (SQLSTATE class 22 or 54): the event, not a dependency. */
  | { status: 'invalid'; eventId: string; issues: FieldIssue[] }
  | { status: 'unavailable'; dependency: 'temporal' | 'postgres' };

/** An event that passed `readPaymentEvent`: its envelope is valid, and its schema too if its type is handled. */
export type ReadPaymentEvent = { id: string; type: string } & Record<string, unknown>;

/**
 * The one path every payment event takes into settle, from the webhook or from `settle import`.
 * A known event ID is decided first, whatever the type: the same payload is a duplicate, any other
 * a conflict. Only then is an unhandled type ignored. The event row commits only after Temporal
 * durably accepted the start, inside one transaction: if the start fails nothing is written and the
 * caller answers 503, so nothing acknowledged is lost. A concurrent delivery of the same ID waits on
 * that row and then sees a duplicate. A repeat is counted on the event (duplicate) or audited in
 * `conflicts` (409); the original is never changed.
 */
export async function admitPaymentEvent(
  deps: Services,
  event: ReadPaymentEvent,
  source: EventSource = 'webhook',
): Promise<IngestOutcome> {
  // The request's span (tracing on) names the event by its short hash, and its shipment.
  const shipmentId = (event.data as { shipment_id?: unknown } | undefined)?.shipment_id;
  annotateSpan({ eventId: event.id, shipmentId: typeof shipmentId === 'string' ? shipmentId : undefined });
  const sha = payloadSha256(event);
  const outcome = await admitUnlessKnown(deps, event, sha, source);
  try {
    // A recovery sweep reading an event settle has is not the provider delivering it again.
    if (outcome.status === 'duplicate' && source !== 'recovery') await recordRedelivery(deps.pool, event.id);
    if (outcome.status === 'conflict') {
      await recordConflict(deps.pool, {
        eventId: event.id,
        payloadSha256: sha,
        payload: event,
        source,
      });
    }
  } catch {
    // Bookkeeping only: the answer to the provider does not depend on it.
  }
  return outcome;
}

async function admitUnlessKnown(
  deps: Services,
  event: ReadPaymentEvent,
  sha: string,
  source: EventSource,
): Promise<IngestOutcome> {
  const workflowId = paymentWorkflowId(event.id);
  const known = (storedSha: string | undefined): IngestOutcome =>
    !storedSha || storedSha === sha
      ? { status: 'duplicate', eventId: event.id, workflowId }
      : { status: 'conflict', eventId: event.id };
  const databaseFailure = (error: unknown): IngestOutcome => {
    const refusal = refusedByDatabase(error);
    return refusal.status === 'invalid' ? { ...refusal, eventId: event.id } : refusal;
  };

  let storedSha;
  try {
    storedSha = await findEventHash(deps.pool, event.id);
  } catch (error) {
    return databaseFailure(error);
  }
  if (storedSha) return known(storedSha);
  if (!isHandledPaymentType(event.type)) return { status: 'ignored', eventId: event.id };
  let markKey: Buffer;
  try {
    markKey = await runMarkKey(deps.pool);
  } catch (error) {
    return databaseFailure(error);
  }

  // A closed run of this ID that the reconcile refused as not admitted (started around settle, or
  // by this door before a commit that was lost) applied nothing: this admission starts a new run.
  let refusedRun = false;
  const admission = await admitThenStart(
    deps.pool,
    {
      insert: async (tx) => {
        const stored = await insertAdmittedEvent(tx, {
          eventId: event.id,
          type: event.type,
          payload: event,
          payloadSha256: sha,
          workflowId,
          source,
        });
        refusedRun = stored.refusedRun;
        return stored.inserted;
      },
      whenKnown: (tx) => findEventHash(tx, event.id),
      // A handled type passed the full schema in readPaymentEvent.
      // An imported report and the events a recovery sweep found are bulk work: their runs, and their
      // calls downstream, wait behind live webhooks.
      start: (tx) =>
        startPaymentWorkflow(deps.client, deps.taskQueue, event as PaymentEvent, {
          markKey,
          runs: tx,
          priority: source === 'import' || source === 'recovery' ? 'bulk' : 'live',
          ...(refusedRun ? { reusePolicy: 'ALLOW_DUPLICATE' as const } : {}),
        }),
    },
    { lockEventId: event.id },
  );

  switch (admission.kind) {
    case 'known':
      return known(admission.known);
    case 'started': {
      // Temporal already knows the ID under a run settle started and recorded (its row was purged):
      // a duplicate. A run settle did not start was displaced by the start: recorded.
      const started = admission.started;
      if (!started.started) return { status: 'duplicate', eventId: event.id, workflowId };
      if (started.displaced.length > 0) {
        const payload = event as PaymentEvent;
        await recordDisplacedRuns(deps.pool, started.displaced, {
          id: event.id,
          type: event.type,
          shipmentId: payload.data.shipment_id,
          payloadSha256: sha,
        }).catch(() => {
          // Bookkeeping: the run was displaced and settle's own started; the start's log names it.
        });
      }
      return { status: 'accepted', eventId: event.id, workflowId, runId: started.runId };
    }
    case 'failed':
      if (admission.dependency === 'postgres') return databaseFailure(admission.error);
      if (startOutcomeUnknown(admission.error)) {
        // Answered 503 all the same (nothing acknowledged); recorded so the retry's `duplicate` is explained.
        startOutcomeUnknownTotal.inc();
        await recordStartOutcomeUnknown(deps.pool, { eventId: event.id, workflowId }).catch(() => {});
      }
      return { status: 'unavailable', dependency: 'temporal' };
  }
}

/**
 * A start that may have been made durable although settle never heard back: the deadline passed, or
 * the connection broke after the request went out. Temporal refusing before (no connection at all)
 * is a start known not to have happened.
 */
function startOutcomeUnknown(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const code = (cause as { code?: unknown }).code;
  if (code === GrpcStatus.DEADLINE_EXCEEDED || code === GrpcStatus.CANCELLED) return true;
  const details = cause instanceof Error ? cause.message : String(cause);
  return code === GrpcStatus.UNAVAILABLE && !/No connection established|ECONNREFUSED|connect/i.test(details);
}

// Admit-then-start: the transaction every admission takes (a reminder's too, app/reminders.ts).

/** The dependency that was down when an admission could not be made durable. */
export type Dependency = 'temporal' | 'postgres';

export type Admission<Known, Started> =
  | { kind: 'known'; known: Known }
  | { kind: 'started'; started: Started }
  /** Nothing was written: `error` is the start's own when `dependency` is `temporal`. */
  | { kind: 'failed'; dependency: Dependency; error: unknown };

/**
 * Admit-then-start, the one path a payment event and a reminder take into settle: inside one
 * transaction, insert the row, then start its workflow, then commit. The row commits only once
 * Temporal durably accepted the start; if the start fails, nothing is written and the caller answers
 * 503, so nothing acknowledged is lost. A concurrent admission of the same ID waits on the row's
 * unique key (a payment event's on its advisory lock first, see db/events.ts insertAdmittedEvent);
 * `insert` then answers false and `whenKnown` reads the row that won. A transaction that lost a race
 * to another (deadlock, serialization, lock timeout) before the start was asked for runs again.
 */
export async function admitThenStart<Known, Started>(
  pool: pg.Pool,
  steps: {
    insert: (tx: pg.PoolClient) => Promise<boolean>;
    whenKnown: (tx: pg.PoolClient) => Promise<Known>;
    /** On the transaction, so that what the start records (its run ID) commits with the row. */
    start: (tx: pg.PoolClient) => Promise<Started>;
  },
  /** A payment event's ID: the transaction holds its advisory lock from its first round trip. */
  options: { lockEventId?: string } = {},
): Promise<Admission<Known, Started>> {
  for (let attempt = 1; ; attempt += 1) {
    // Set inside the transaction's callback, so read through the union, not narrowed to its start.
    let stage = 'inserting' as 'inserting' | 'starting' | 'committing';
    try {
      return await withTransaction(
        pool,
        async (tx): Promise<Admission<Known, Started>> => {
          if (!(await steps.insert(tx))) return { kind: 'known', known: await steps.whenKnown(tx) };
          stage = 'starting';
          const started = await steps.start(tx);
          stage = 'committing';
          return { kind: 'started', started };
        },
        options,
      );
    } catch (error) {
      // A race lost to another transaction before the start was asked for left nothing anywhere: the
      // admission runs again. After the start, a run may exist, and the caller answers 503 as for any
      // failed commit (the provider's retry then finds what was made durable).
      const code = (error as { code?: unknown }).code;
      if (stage !== 'inserting' || !isTransientConflict(code) || attempt >= CONFLICT_ATTEMPTS) {
        return { kind: 'failed', dependency: stage === 'starting' ? 'temporal' : 'postgres', error };
      }
      await delay(CONFLICT_BACKOFF_MS * attempt * (0.5 + Math.random()));
    }
  }
}

/**
 * How often an admission runs again after losing a race (a deadlock, a serialization failure, a lock
 * timeout) before it answers 503 with Retry-After, and the mean wait before the second try (twice it
 * before the third). The locks an admission takes are held for one Temporal start at most.
 */
const CONFLICT_ATTEMPTS = 3;
const CONFLICT_BACKOFF_MS = 25;

/**
 * A database call of an admission that failed: a value PostgreSQL refused (SQLSTATE class 22 or 54)
 * is the request's fault, a 400 naming the body; anything else but a bug means PostgreSQL is down or
 * busy, or the admission kept losing a race to another transaction: a 503. A bug is rethrown.
 */
export function refusedByDatabase(
  error: unknown,
): { status: 'invalid'; issues: FieldIssue[] } | { status: 'unavailable'; dependency: 'postgres' } {
  const kind = classifyDatabaseFailure(error);
  if (kind === 'bug') throw error;
  return kind === 'invalid_data'
    ? { status: 'invalid', issues: [{ path: '(body)', message: 'holds a value PostgreSQL cannot store' }] }
    : { status: 'unavailable', dependency: 'postgres' };
}
