import type { OutboxTarget } from '../domain/outbox';
import { OPEN_TARGET } from './exceptions';
import type { Queryable } from './pool';

/** Why a call to a target waits: a Retry-After pause, its failing period, a probe out, or a limit. */
export type HeldReason = 'paused' | 'failing' | 'probing' | 'in_flight' | 'rate';

export type Admission =
  | {
      held: null;
      /** How long the call waits for its slot of the rate limit before it goes. */
      waitMs: number;
      /** Its lease on a slot in flight (a probe, or a target with SETTLE_<TARGET>_MAX_IN_FLIGHT). */
      callId: number | null;
      /** The one call that probes a target paused or failing. */
      probe: boolean;
    }
  | { held: HeldReason; until: Date };

export type AdmissionRequest = {
  target: OutboxTarget;
  /** Imported and recovered events' calls: they yield to live ones. */
  bulk: boolean;
  /** Calls a second, or undefined for no limit. */
  ratePerSecond: number | undefined;
  maxInFlight: number | undefined;
  /** The longest wait for a slot worth reserving now; past it the call is held and comes back. */
  maxWaitMs: number;
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
    wait_ms: number;
    call_id: string | null;
    probe: boolean;
  }>({
    name: 'target.admit',
    text: `SELECT held, until, wait_ms, call_id, probe
             FROM settle_admit_target_call($1::text, $2::boolean, $3::float8, $4::int, $5::int, $6::int, $7::bigint)`,
    values: [
      request.target,
      request.bulk,
      request.ratePerSecond ?? null,
      request.maxInFlight ?? null,
      Math.round(request.maxWaitMs),
      Math.round(request.leaseMs),
      request.outboxId,
    ],
  });
  const row = rows[0]!;
  if (row.held) return { held: row.held, until: row.until! };
  return {
    held: null,
    waitMs: row.wait_ms,
    callId: row.call_id === null ? null : Number(row.call_id),
    probe: row.probe,
  };
}

/**
 * After a wait for its slot, whether the call may still go: null if so; else why not (a pause or a
 * failure another worker recorded meanwhile), and its lease is released. A probe always may.
 */
export async function recheckTargetCall(
  db: Queryable,
  target: OutboxTarget,
  callId: number | null,
  /** The row whose attempt was counted: taken back, as admission does for a held call. */
  outboxId: number | null,
): Promise<{ held: HeldReason; until: Date } | null> {
  const { rows } = await db.query<{ paused: boolean; until: Date | null }>({
    name: 'target.recheck',
    text: `WITH s AS (
             SELECT coalesce(paused_until > clock_timestamp(), false) AS paused,
                    greatest(paused_until, next_probe_at) AS until
               FROM target_pressure WHERE target = $1::text AND probing),
           released AS (DELETE FROM target_calls WHERE call_id = $2::bigint AND EXISTS (SELECT 1 FROM s)),
           uncounted AS (
             UPDATE outbox SET attempts = greatest(attempts - 1, 0), updated_at = now(),
                               last_error = 'held by settle: the target asked for a pause or is failing'
              WHERE outbox_id = $3::bigint AND status = 'pending' AND EXISTS (SELECT 1 FROM s))
           SELECT paused, until FROM s`,
    values: [target, callId, outboxId],
  });
  const row = rows[0];
  if (!row) return null;
  return { held: row.paused ? 'paused' : 'failing', until: row.until ?? new Date() };
}

/** How a target answered, as the shared state reads it. */
export type TargetAnswer =
  | { answer: 'success' }
  | { answer: 'pause'; pauseMs: number; error: string }
  | { answer: 'failure'; openAfterMs: number; error: string };

/**
 * Records how an admitted call ended and releases its lease: a success closes the target, a pause
 * holds every worker's calls until it has passed, a failure opens it after SETTLE_<TARGET>_OPEN_AFTER.
 */
export async function recordTargetAnswer(
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

/** A target failing without a success for its SETTLE_<TARGET>_OPEN_AFTER. */
export type OpenTarget = {
  target: string;
  failingSince: Date;
  openedAt: Date;
  failures: number;
  lastError: string | null;
};

/** The targets open now (a probe has not yet succeeded), oldest first: the gauge, stats and exceptions read it. */
export async function listOpenTargets(db: Queryable): Promise<OpenTarget[]> {
  const { rows } = await db.query<OpenTarget>(
    `SELECT target, failing_since AS "failingSince",
            failing_since + open_after_ms * interval '1 millisecond' AS "openedAt",
            failures, last_error AS "lastError"
       FROM target_pressure
      WHERE ${OPEN_TARGET}
      ORDER BY failing_since`,
  );
  return rows;
}
