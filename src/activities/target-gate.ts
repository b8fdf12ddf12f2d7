import { ApplicationFailure, Context } from '@temporalio/activity';
import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import type { Queryable } from '../db/pool';
import { ErrorCode } from '../domain/errors';
import { deliveryTarget, type OutboxTarget } from '../domain/outbox';
import { gateRate, targetLimits, type TargetLimitsConfig } from '../domain/target-limits';
import { isBulkTaskQueue } from '../temporal/task-queues';
import { targetHeldTotal } from '../metrics/settle-metrics';
import type { CallOutcome } from './downstream';

// Downstream pressure (docs/delivery.md): every call to a delivery target passes this gate, which
// shares the target's rate limit, calls in flight, Retry-After pause and failing state with every
// other worker through its `target_pressure` row in PostgreSQL. The gate's three statements are at
// the end of this module: they belong to it alone (the functions they call are in the migrations;
// admission and its recheck are exported for their test), and the open targets' read is
// db/exceptions.ts's.

/** A live call waits in the activity for a slot at most this long; past it, it is held and comes back. */
const LIVE_MAX_WAIT_MS = 1_000;
/**
 * A bulk call held by a limit in its durable activity waits there, asking again at its turn, for at
 * most this long in all (well inside the activity's timeout, with one request's to spare); past it,
 * it is held and comes back. Holding a call through Temporal (a failure, a timer, the run's delivery
 * state) cost three times what the call does. In the first pass (a local activity) a bulk call waits
 * for one slot at most: longer would keep its run's workflow-task slot, one of the few
 * SETTLE_BULK_CONCURRENCY gives the import, and leave a limited target idle; it hands the row to the
 * durable activity instead.
 */
const BULK_MAX_WAIT_MS = 60_000;
/** A waiting durable activity tells Temporal it is alive at least this often (its heartbeat timeout is longer). */
const WAIT_HEARTBEAT_MS = 5_000;
/** The longest wait between two probes of a failing target: its "one probe per interval". */
export const PROBE_EVERY_MAX_MS = 10_000;
/** A held call's longest wait before it asks again (a failing target's waiters, spread out). */
export const HELD_MAX_WAIT_MS = 60_000;
/** How long a lease outlives its call's timeout, for a worker that vanished mid-call. */
const LEASE_MARGIN_MS = 5_000;

export type GateDependencies = {
  pool: pg.Pool;
  config: TargetLimitsConfig;
  requestTimeoutMs: number;
};

/** An admitted call: its lease, and whether its answer must be recorded (it went through the gate). */
export type TargetPass = { callId: number | null; recorded: boolean };

/**
 * Admits one call to `target`, waiting in the activity for a slot when the wait is short (a bulk call
 * takes only a free or the next slot, and in its durable activity also waits for its turn while
 * BULK_MAX_WAIT_MS lasts). A call that is held (a pause, a failing target whose probe is out, a
 * limit) throws a retryable `downstream_throttled` failure whose delay is when to ask again: no call
 * was made, the attempt the row's start counted is taken back, and the row keeps its
 * Idempotency-Key; a bulk first pass's call held by a limit is handed to the durable activity at
 * once. `troubled` is what the row's start read of the target (false: no pause, no failure); with no
 * limits set and no trouble, the call goes without a statement of its own. `outboxId`: the row the
 * call delivers, if any.
 */
export async function enterTarget(
  deps: GateDependencies,
  target: OutboxTarget,
  troubled: boolean,
  outboxId: number | null,
): Promise<TargetPass> {
  const limits = targetLimits(deps.config, target);
  if (!troubled && limits.ratePerSecond === undefined && limits.maxInFlight === undefined) {
    return { callId: null, recorded: false };
  }
  const context = Context.current();
  const bulk = isBulkTaskQueue(context.info.taskQueue);
  const rate = limits.ratePerSecond && gateRate(limits.ratePerSecond);
  const local = context.info.isLocal;
  const waitEnds = Date.now() + (bulk && !local ? BULK_MAX_WAIT_MS : 0);
  // A bulk call takes a slot only when it is free or the next one (a slot's wait at most), so a live
  // call waits behind the bulk backlog for a slot at most: it takes a slot a bulk call reserved and has
  // not used yet. A paced import's run reaches the gate about as its slot comes (app/import-pace.ts);
  // one late by a little leaves the next a little early, and half a slot's wait handed most of them
  // over. A bulk call whose slot a live call took was first in line: it takes the one after, too.
  const slotMs = rate ? 1000 / rate : 0;
  let lentAway = false;
  for (;;) {
    let admission: Admission;
    for (;;) {
      admission = await admitTargetCall(deps.pool, {
        target,
        bulk,
        ratePerSecond: rate,
        maxInFlight: limits.maxInFlight,
        maxWaitMs: bulk ? (lentAway ? 2 : 1) * slotMs : LIVE_MAX_WAIT_MS,
        holdMs: Math.max(0, waitEnds - Date.now()),
        leaseMs: deps.requestTimeoutMs + LEASE_MARGIN_MS,
        outboxId,
      });
      if (admission.held === null || !admission.waits) break;
      await waitInActivity(context, admission.waitMs);
    }
    if (admission.held !== null) {
      targetHeldTotal.inc({ target, reason: admission.held });
      const handOver = bulk && local && (admission.held === 'rate' || admission.held === 'in_flight');
      throw heldFailure(target, admission.held, admission.until, context.info.attempt, handOver);
    }
    if (admission.waitMs === 0) return { callId: admission.callId, recorded: true };
    await delay(admission.waitMs, undefined, { signal: context.cancellationSignal });
    // Another worker may have met a pause or a failure meanwhile: it holds this call too. A live call
    // may have taken a bulk call's slot: the bulk call asks for another.
    const since = admission.probe
      ? null
      : await recheckTargetCall(deps.pool, target, admission.callId, outboxId, admission.slot);
    if (since === 'lent') {
      lentAway = true;
      continue;
    }
    if (since) {
      targetHeldTotal.inc({ target, reason: since.held });
      throw heldFailure(target, since.held, since.until, context.info.attempt);
    }
    return { callId: admission.callId, recorded: true };
  }
}

/** Waits `ms` in the activity; a durable one tells Temporal it is alive at least every WAIT_HEARTBEAT_MS. */
async function waitInActivity(context: Context, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= WAIT_HEARTBEAT_MS) {
    await delay(Math.min(left, WAIT_HEARTBEAT_MS), undefined, { signal: context.cancellationSignal });
    if (!context.info.isLocal) context.heartbeat();
  }
}

/**
 * Records how an admitted call ended, for every worker: a 2xx or a refusal (the target answered) is a
 * success; a 429/503 with Retry-After pauses the target; any other retryable outcome is a failure,
 * and the target opens once it has failed without a success for SETTLE_<TARGET>_OPEN_AFTER. A call
 * that passed without the gate records only what changes the target's state.
 */
export async function leaveTarget<Outcome extends CallOutcome>(
  deps: GateDependencies,
  target: OutboxTarget,
  pass: TargetPass,
  outcome: Outcome,
): Promise<Outcome> {
  const answer =
    outcome.kind !== 'retry'
      ? ({ answer: 'success' } as const)
      : outcome.delayMs !== undefined
        ? ({ answer: 'pause', pauseMs: outcome.delayMs, error: outcome.detail } as const)
        : ({
            answer: 'failure',
            openAfterMs: targetLimits(deps.config, target).openAfterMs,
            error: outcome.detail,
          } as const);
  if (!pass.recorded && answer.answer === 'success') return outcome;
  await recordTargetAnswer(deps.pool, target, pass.callId, answer, PROBE_EVERY_MAX_MS);
  if (outcome.kind !== 'retry' || answer.answer === 'success') return outcome;
  const delay = retryDelayAfter(answer, Context.current().info.attempt);
  return answer.answer === 'pause' ? { ...outcome, delayMs: delay } : { ...outcome, backoffMs: delay };
}

/**
 * When a call the target did not take asks again. After a pause: behind the calls the pause held (they
 * return within the pause plus its spread, heldFailure), and later each time the target refuses it
 * again, so that a target refusing one key's calls (a shipment it holds) answers the others' probes
 * instead of this call taking every probe; never before the Retry-After. After a failure: no later
 * than a held call would (the backoff capped at HELD_MAX_WAIT_MS), not after the activity's own
 * backoff, which grows to minutes: the target's failing state already keeps every worker to one probe
 * per interval, and a row whose probe failed late in an outage would otherwise wait that long after
 * the target is back.
 */
export function retryDelayAfter(
  answer: { answer: 'pause'; pauseMs: number } | { answer: 'failure' },
  attempt: number,
): number {
  const backoff = jittered(cappedBackoff(1_000, attempt));
  if (answer.answer === 'failure') return Math.round(backoff);
  return Math.round(answer.pauseMs + Math.min(1_000, answer.pauseMs) + backoff);
}

/** A backoff from `floorMs`, doubling with each attempt, capped at a held call's longest wait. */
function cappedBackoff(floorMs: number, attempt: number): number {
  return Math.min(floorMs * 2 ** Math.max(0, attempt - 1), HELD_MAX_WAIT_MS);
}

/** Between 0.8 and 1.2 times `ms`, so that waiters do not all return at once. */
function jittered(ms: number): number {
  return ms * (0.8 + Math.random() * 0.4);
}

const HELD_BECAUSE: Record<HeldReason, string> = {
  paused: 'paused by its Retry-After',
  failing: 'failing: one probe at a time',
  probing: 'failing: a probe is in flight',
  in_flight: 'at its limit of calls in flight',
  rate: 'at its rate limit',
};

/**
 * The failure of a held call. Its delay: a pause's end or the next slot, spread a little so the
 * waiters do not return at once; for a failing target or a full one, at least a backoff that grows
 * with the attempts, so thousands of waiters do not ask every second.
 */
function heldFailure(
  target: OutboxTarget,
  reason: HeldReason,
  until: Date,
  attempt: number,
  /** A bulk first pass's call held by a limit: the durable activity takes it at once (StepFailure). */
  handOver = false,
): ApplicationFailure {
  const untilMs = Math.max(0, until.getTime() - Date.now());
  let delayMs: number;
  if (reason === 'paused') delayMs = untilMs + Math.random() * Math.min(1_000, untilMs);
  else if (reason === 'rate') delayMs = untilMs;
  else {
    const floor = reason === 'in_flight' ? 200 : 1_000;
    delayMs = jittered(Math.max(untilMs, cappedBackoff(floor, attempt)));
  }
  delayMs = Math.max(1, Math.round(delayMs));
  return ApplicationFailure.create({
    message: `held: the ${deliveryTarget(target).label} is ${HELD_BECAUSE[reason]}, retry after ${delayMs} ms`,
    type: ErrorCode.DownstreamThrottled,
    nextRetryDelay: delayMs,
    details: [handOver ? { retryAfterMs: delayMs, handOver } : { retryAfterMs: delayMs }],
  });
}

// The gate's statements on `target_pressure` and `target_calls`, shared by every worker.

/** Why a call to a target waits: a Retry-After pause, its failing period, a probe out, or a limit. */
type HeldReason = 'paused' | 'failing' | 'probing' | 'in_flight' | 'rate';

export type Admission =
  | {
      held: null;
      /** How long the call waits for its slot of the rate limit before it goes. */
      waitMs: number;
      /** Its lease on a slot in flight (a probe, or a target with SETTLE_<TARGET>_MAX_IN_FLIGHT). */
      callId: number | null;
      /** The one call that probes a target paused or failing. */
      probe: boolean;
      /** A bulk call's slot to come, which a live call may take meanwhile (PostgreSQL's text of it). */
      slot: string | null;
    }
  | {
      held: HeldReason;
      until: Date;
      /** Held by a limit until a time within the request's holdMs: the caller waits waitMs and asks again. */
      waits: boolean;
      waitMs: number;
    };

export type AdmissionRequest = {
  target: OutboxTarget;
  /** Imported and recovered events' calls: they yield to live ones. */
  bulk: boolean;
  /** Calls a second, or undefined for no limit. */
  ratePerSecond: number | undefined;
  maxInFlight: number | undefined;
  /** The longest wait for a slot worth reserving now; past it the call is held and comes back. */
  maxWaitMs: number;
  /**
   * How long the caller would still wait in its activity for a turn a limit gives: a hold by a limit
   * that ends within it keeps the row's counted attempt, and the caller asks again after the wait.
   */
  holdMs: number;
  /** How long a lease outlives a worker that vanished mid-call. */
  leaseMs: number;
  /** The outbox row whose start counted an attempt: a held call uncounts it and notes why. */
  outboxId: number | null;
};

/** Admits one call to a target under the limits every worker shares, in one statement. */
export async function admitTargetCall(db: Queryable, request: AdmissionRequest): Promise<Admission> {
  const { rows } = await db.query<{
    held: HeldReason | null;
    until: Date | null;
    slot: string | null;
    wait_ms: number;
    call_id: string | null;
    probe: boolean;
    waits: boolean;
  }>({
    name: 'target.admit',
    text: `SELECT held, until, until::text AS slot, wait_ms, call_id, probe, waits
             FROM settle_admit_target_call($1::text, $2::boolean, $3::float8, $4::int, $5::int, $6::int, $7::bigint, $8::int)`,
    values: [
      request.target,
      request.bulk,
      request.ratePerSecond ?? null,
      request.maxInFlight ?? null,
      Math.round(request.maxWaitMs),
      Math.round(request.leaseMs),
      request.outboxId,
      Math.round(request.holdMs),
    ],
  });
  const row = rows[0]!;
  if (row.held) return { held: row.held, until: row.until!, waits: row.waits, waitMs: row.wait_ms };
  return {
    held: null,
    waitMs: row.wait_ms,
    callId: row.call_id === null ? null : Number(row.call_id),
    probe: row.probe,
    slot: row.slot,
  };
}

/**
 * After a wait for its slot, whether the call may still go: null if so; `lent` if a live call took
 * the bulk call's `slot` (it asks for another); else why not (a pause or a failure another worker
 * recorded meanwhile). A call that may not go releases its lease. A probe always may.
 */
export async function recheckTargetCall(
  db: Queryable,
  target: OutboxTarget,
  callId: number | null,
  /** The row whose attempt was counted: taken back, as admission does for a held call. */
  outboxId: number | null,
  slot: string | null,
): Promise<{ held: HeldReason; until: Date } | 'lent' | null> {
  const { rows } = await db.query<{ paused: boolean | null; until: Date | null; lent: boolean }>({
    name: 'target.recheck',
    text: `WITH s AS (
             SELECT coalesce(paused_until > clock_timestamp(), false) AS paused,
                    greatest(paused_until, next_probe_at) AS until
               FROM target_pressure WHERE target = $1::text AND probing),
           kept AS (
             UPDATE target_pressure SET bulk_slots = array_remove(bulk_slots, $4::timestamptz)
              WHERE target = $1::text AND $4::timestamptz = ANY(bulk_slots) RETURNING 1),
           lost AS (SELECT $4::timestamptz IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kept) AS lent),
           released AS (
             DELETE FROM target_calls
              WHERE call_id = $2::bigint AND (EXISTS (SELECT 1 FROM s) OR (SELECT lent FROM lost))),
           uncounted AS (
             UPDATE outbox SET attempts = greatest(attempts - 1, 0), updated_at = now(),
                               last_error = 'held by settle: the target asked for a pause or is failing'
              WHERE outbox_id = $3::bigint AND status = 'pending' AND EXISTS (SELECT 1 FROM s))
           SELECT s.paused, s.until, lost.lent FROM lost LEFT JOIN s ON true`,
    values: [target, callId, outboxId, slot],
  });
  const row = rows[0]!;
  if (row.paused !== null) return { held: row.paused ? 'paused' : 'failing', until: row.until ?? new Date() };
  return row.lent ? 'lent' : null;
}

/** How a target answered, as the shared state reads it. */
type TargetAnswer =
  | { answer: 'success' }
  | { answer: 'pause'; pauseMs: number; error: string }
  | { answer: 'failure'; openAfterMs: number; error: string };

/**
 * Records how an admitted call ended and releases its lease: a success closes the target, a pause
 * holds every worker's calls until it has passed, a failure opens it after SETTLE_<TARGET>_OPEN_AFTER.
 */
async function recordTargetAnswer(
  db: Queryable,
  target: OutboxTarget,
  callId: number | null,
  answer: TargetAnswer,
  probeMaxMs: number,
): Promise<void> {
  await db.query({
    name: 'target.record_answer',
    text: 'SELECT settle_record_target_answer($1::text, $2::bigint, $3::text, $4::bigint, $5::bigint, $6::bigint, $7::text)',
    values: [
      target,
      callId,
      answer.answer,
      answer.answer === 'pause' ? Math.round(answer.pauseMs) : null,
      answer.answer === 'failure' ? answer.openAfterMs : null,
      probeMaxMs,
      answer.answer === 'success' ? null : answer.error,
    ],
  });
}
