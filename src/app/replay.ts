import { setTimeout as delay } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type pg from 'pg';
import type { ReconcileResult } from '../domain/workflow-contracts';
import { startPaymentWorkflow } from '../client';
import { recordDisplacedRuns, runMarkKey } from './run-marks';
import { findClaim, type ClaimOutcome } from '../db/claims';
import { findEvent } from '../db/events';
import { withTransaction } from '../db/transaction';
import { listOutboxForEvent } from '../db/outbox';
import type { OutboxStatus } from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import { reconciledQuery } from '../workflows/payment';
import type { Services } from './services';

/** How often a replay asks the run whether its reconcile has decided, and the outbox how deliveries go. */
const POLL_MS = 300;
const QUERY_DEADLINE_MS = 10_000;

export type ReplayDelivery = {
  target: string;
  action: string;
  /**
   * What this replay did about the delivery: `started` (pending, and the run it started sends it),
   * `in_flight` (pending, and the run already running sends it), `left` (not sent: the claim's outcome
   * is not `applied`), or `none` (already settled: delivered, failed, compensated, not_configured).
   */
  action_taken: 'started' | 'in_flight' | 'left' | 'none';
  /** The delivery's state before the replay, and now (after waiting, with `wait`). */
  status_before: OutboxStatus | null;
  status: OutboxStatus;
  attempts: number;
  last_error: string | null;
};

export type ReplayResult =
  | { status: 'not_found'; event_id: string }
  | {
      /** `replayed`: the reconcile decided; `undecided`: the timeout or an interrupt came first. */
      status: 'replayed' | 'undecided';
      event_id: string;
      workflow_id: string;
      run_id: string;
      /** True when a run of this event was already running: the replay joined it instead of starting one. */
      joined_running_run: boolean;
      /** The claim's outcome before the replay (null: never reconciled) and after it (null: undecided). */
      before: ClaimOutcome | null;
      after: ClaimOutcome | null;
      /** True when this replay changed the claim (an unmatched event applied now). */
      changed: boolean;
      deliveries: ReplayDelivery[];
      /** With `wait`: whether every delivery settled before the timeout (null without `wait`). */
      deliveries_settled: boolean | null;
      /** Why the run ended without deciding, when it did (the workflow's status). */
      run_status: string | null;
    };

export type ReplayOptions = {
  /** How long to wait for the reconcile to decide. */
  decideTimeoutMs: number;
  /** Also wait (this long) until no delivery is pending, or the run has ended. */
  waitForDeliveriesMs?: number;
  signal?: AbortSignal;
  /** Told when the reconcile has decided and the wait for the deliveries begins. */
  onWaiting?: (decided: { event_id: string; outcome: ClaimOutcome; pending: number }) => void;
};

const DEFAULT_OPTIONS: ReplayOptions = { decideTimeoutMs: 60_000 };

export type ReplayReport = {
  /** In the order of the IDs asked for; an ID not reached before the signal is missing. */
  results: ReplayResult[];
  summary: {
    replayed: number;
    applied_now: number;
    unchanged: number;
    undecided: number;
    not_found: number;
    deliveries_started: number;
    deliveries_pending: number;
    interrupted: boolean;
  };
};

/**
 * Replays each event (`replayEvent`), `concurrency` at a time, until all are done or `options.signal`
 * aborts (what was replayed stands), and sums up what happened. `onResult` hears each as it ends.
 */
export async function replayEvents(
  deps: Services,
  eventIds: readonly string[],
  options: ReplayOptions & { concurrency: number; onResult?: (result: ReplayResult, done: number) => void },
): Promise<ReplayReport> {
  const results: ReplayResult[] = [];
  let next = 0;
  const replayNext = async (): Promise<void> => {
    while (next < eventIds.length && !options.signal?.aborted) {
      const result = await replayEvent(deps, eventIds[next++]!, options);
      results.push(result);
      options.onResult?.(result, results.length);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, replayNext));
  results.sort((a, b) => eventIds.indexOf(a.event_id) - eventIds.indexOf(b.event_id));
  return { results, summary: summarise(results, options.signal?.aborted ?? false) };
}

function summarise(results: ReplayResult[], interrupted: boolean): ReplayReport['summary'] {
  const replayed = results.flatMap((r) => (r.status === 'replayed' ? [r] : []));
  const deliveries = replayed.flatMap((r) => r.deliveries);
  return {
    replayed: replayed.length,
    applied_now: replayed.filter((r) => r.changed && r.after === 'applied').length,
    unchanged: replayed.filter((r) => !r.changed).length,
    undecided: results.filter((r) => r.status === 'undecided').length,
    not_found: results.filter((r) => r.status === 'not_found').length,
    deliveries_started: deliveries.filter((d) => d.action_taken === 'started').length,
    deliveries_pending: deliveries.filter((d) => d.status === 'pending').length,
    interrupted,
  };
}

/**
 * Pushes one stored event through the same workflow again and says what it did. The claim decides:
 * an applied event changes nothing (but its pending deliveries are sent again, by the new run), an
 * unmatched one is applied now if its shipment exists. Returns once the reconcile has decided (the
 * run's `reconciled` query answers), not when the deliveries are done, unless `waitForDeliveriesMs`.
 * When the event's run is still running, the replay joins it instead of starting another. Safe to
 * interrupt and to repeat: the claim and the outbox rows' status make every repeat harmless.
 */
export async function replayEvent(
  deps: Services,
  eventId: string,
  options: ReplayOptions = DEFAULT_OPTIONS,
): Promise<ReplayResult> {
  const stored = await findEvent(deps.pool, eventId);
  if (!stored) return { status: 'not_found', event_id: eventId };
  const before = (await findClaim(deps.pool, eventId))?.outcome ?? null;
  const rowsBefore = await listOutboxForEvent(deps.pool, eventId);
  const payload = stored.payload as PaymentEvent;
  const markKey = await runMarkKey(deps.pool);
  // Under the event's lock, the run's record committing with it: a replay racing another waits, then
  // finds the other's run recorded as settle's and joins it rather than taking it for a foreign one.
  const start = await withTransaction(
    deps.pool,
    (tx) =>
      startPaymentWorkflow(deps.client, deps.taskQueue, payload, {
        markKey,
        runs: tx,
        reusePolicy: 'ALLOW_DUPLICATE',
      }),
    { lockEventId: eventId },
  );
  if (start.started && start.displaced.length > 0) {
    await recordDisplacedRuns(deps.pool, start.displaced, {
      id: eventId,
      type: payload.type,
      shipmentId: payload.data.shipment_id,
      payloadSha256: stored.payloadSha256,
    });
  }
  // The run asked is settle's own, by its recorded run ID: never whatever run holds the ID later.
  const runId = start.runId;
  const handle = deps.client.workflow.getHandle(start.workflowId, runId);

  const decision = await untilDecided(deps.client, handle, options.decideTimeoutMs, options.signal);
  let settled: boolean | null = null;
  if (decision.reconciled && options.waitForDeliveriesMs !== undefined) {
    options.onWaiting?.({
      event_id: eventId,
      outcome: decision.reconciled.outcome,
      pending: decision.reconciled.outbox.filter((row) => row.status === 'pending').length,
    });
    settled = await untilDeliveriesSettle(
      deps.pool,
      handle,
      eventId,
      options.waitForDeliveriesMs,
      options.signal,
    );
  }
  const rowsNow = await listOutboxForEvent(deps.pool, eventId);
  const pendingAtDecision = new Set(
    decision.reconciled?.outbox.filter((row) => row.status === 'pending').map((row) => row.outboxId) ?? [],
  );
  const after = decision.reconciled?.outcome ?? null;
  const deliveries = rowsNow.map((row): ReplayDelivery => {
    const previous = rowsBefore.find((old) => old.outboxId === row.outboxId);
    const sentByRun = after === 'applied' && pendingAtDecision.has(row.outboxId);
    return {
      target: row.target,
      action: row.action,
      action_taken: sentByRun
        ? start.started
          ? 'started'
          : 'in_flight'
        : (previous?.status ?? row.status) === 'pending'
          ? 'left'
          : 'none',
      status_before: previous?.status ?? null,
      status: row.status,
      attempts: row.attempts,
      last_error: row.lastError,
    };
  });
  return {
    status: decision.reconciled ? 'replayed' : 'undecided',
    event_id: eventId,
    workflow_id: start.workflowId,
    run_id: runId,
    joined_running_run: !start.started,
    before,
    after,
    changed: after !== null && before !== after,
    deliveries,
    deliveries_settled: settled,
    run_status: decision.runStatus,
  };
}

/** Asks the run for its reconcile's decision until it answers, the run ends without one, or time is up. */
async function untilDecided(
  client: Client,
  handle: WorkflowHandle,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<{ reconciled: ReconcileResult | null; runStatus: string | null }> {
  const deadline = Date.now() + timeoutMs;
  // A query waits for a worker to answer it; bounded, so that no worker means a timely `undecided`.
  const ask = () => {
    const bounded = () =>
      client.connection.withDeadline(Math.min(deadline, Date.now() + QUERY_DEADLINE_MS), () =>
        handle.query(reconciledQuery),
      );
    return (signal ? client.connection.withAbortSignal(signal, bounded) : bounded()).catch(() => null);
  };
  while (!signal?.aborted) {
    const reconciled = await ask();
    if (reconciled) return { reconciled, runStatus: null };
    const status = (await handle.describe()).status.name;
    if (status !== 'RUNNING') {
      // A run that ended may have decided after the last query: ask once more.
      const late = await ask();
      return { reconciled: late, runStatus: late ? null : status };
    }
    if (Date.now() >= deadline) break;
    await delay(POLL_MS, undefined, { signal }).catch(() => {});
  }
  return { reconciled: null, runStatus: null };
}

/** True once no delivery of the event is pending; false when the run ended with some still pending, or time is up. */
async function untilDeliveriesSettle(
  pool: pg.Pool,
  handle: WorkflowHandle,
  eventId: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!signal?.aborted) {
    const rows = await listOutboxForEvent(pool, eventId);
    if (!rows.some((row) => row.status === 'pending')) return true;
    if ((await handle.describe()).status.name !== 'RUNNING') {
      const again = await listOutboxForEvent(pool, eventId);
      return !again.some((row) => row.status === 'pending');
    }
    if (Date.now() >= deadline) return false;
    await delay(POLL_MS, undefined, { signal }).catch(() => {});
  }
  return false;
}
