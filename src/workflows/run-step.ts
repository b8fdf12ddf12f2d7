import {
  ActivityFailure,
  type ActivityFunction,
  type ActivityFunctionWithOptions,
  type LocalActivityFunctionWithOptions,
  ApplicationFailure,
  log,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities';
import { ErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../domain/errors';
import { stepFailureOf, type StepFailure } from '../domain/workflow-contracts';
import type { OperatorView } from './operator-view';

// The payment workflow's step runner: its activities' timeouts and retry policies, and runStep's
// local-then-durable fallback (workflows/payment.ts reads as the story; this is how a step runs).

/**
 * Reconcile and the ledger-side compensation are PostgreSQL transactions: they retry without limit on
 * infrastructure failures (PostgreSQL down, a serialization race), and the claim makes every retry safe.
 * Only the codes in NON_RETRYABLE_ERROR_TYPES stop them, and they fail the workflow with that code.
 */
const TRANSACTION_RETRY = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
} as const;
export const transactions = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: TRANSACTION_RETRY,
});

/**
 * One downstream call per attempt. 5xx, timeouts and unreachable targets retry with backoff, without
 * limit: the idempotency key makes every retry safe, and inspect shows the attempts and last error.
 * A 429/503 Retry-After sets the next delay exactly (nextRetryDelay, above maximumInterval if need be).
 * A 4xx is `downstream_rejected`, non-retryable. The heartbeat notices a vanished worker within 10 s.
 */
const DOWNSTREAM_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '5 minutes',
  nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
} as const;
export const downstream = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: DOWNSTREAM_RETRY,
});

/**
 * The fast path: each step first runs once as a local activity, in the worker that runs the workflow,
 * with no task queue or history round trip per step (a whole event usually completes in one workflow
 * task). Only one attempt: when it fails, or its worker dies (the workflow task times out and another
 * worker replays and tries again), the step goes to the durable activity above, with its retry policy,
 * heartbeats, Retry-After and ActivityFailure. Both paths are safe to repeat for the same reason every
 * retry is: the claim, the outbox row's status and the downstream Idempotency-Key.
 */
const local = proxyLocalActivities<Activities>({
  // Longer than a delivery's 15 s request timeout, so a local call has always ended when it gives up.
  startToCloseTimeout: '20 seconds',
  retry: { maximumAttempts: 1 },
});

/**
 * The first pass (activities/deliver-outbox.ts): the reconcile and each row's first delivery in
 * one local activity, one attempt. Its time is a bound on a hang: it starts a delivery only while one
 * request's timeout still fits inside it, so a call it made has always ended when it gives up.
 */
export const RECONCILE_AND_DELIVER = proxyLocalActivities<Activities>({
  startToCloseTimeout: '60 seconds',
  retry: { maximumAttempts: 1 },
}).reconcileAndDeliver;

/**
 * Undoes a delivered row with its target's `undo` (the carrier re-holds the shipment). The activity
 * type keeps the name recorded in the runs' histories, `reholdShipment`.
 */
export const undoDelivery = downstream.reholdShipment;

/** What a step runs: its activity through both proxies, and the durable retry policy's first wait. */
type Step<F extends ActivityFunction> = {
  local: LocalActivityFunctionWithOptions<F>;
  durable: ActivityFunctionWithOptions<F>;
  firstRetryDelay: Duration;
};

/** The steps of a payment run. */
export const RECONCILE: Step<Activities['reconcilePayment']> = {
  local: local.reconcilePayment,
  durable: transactions.reconcilePayment,
  firstRetryDelay: TRANSACTION_RETRY.initialInterval,
};
export const DELIVER: Step<Activities['deliverOutboxRow']> = {
  local: local.deliverOutboxRow,
  durable: downstream.deliverOutboxRow,
  firstRetryDelay: DOWNSTREAM_RETRY.initialInterval,
};

/**
 * Runs a step as a local activity once, and after a failure as the durable activity (retryDurably).
 * The summary names the step in the UI.
 */
export async function runStep<F extends ActivityFunction>(
  step: Step<F>,
  args: Parameters<F>,
  summary: string,
  view: OperatorView,
  onRetry: (reason: string) => void = () => {},
): Promise<Awaited<ReturnType<F>>> {
  try {
    return await step.local.executeWithOptions({ summary }, args);
  } catch (error) {
    return retryDurably(step, args, summary, view, failureOf(error), onRetry);
  }
}

/**
 * A step whose first attempt (a local activity, or a step of the first pass) failed, run as the
 * durable activity: at once for a failure no retry can fix (the durable attempt meets the same stored
 * state and fails the same way, so the workflow's failure names the activity), otherwise after the
 * durable retry policy's first interval (or the downstream's Retry-After). `onRetry` runs before a
 * retryable failure's wait. The durable activity's summary adds why it runs, so a failed first attempt
 * is never mistaken for a good one.
 */
export async function retryDurably<F extends ActivityFunction>(
  step: Step<F>,
  args: Parameters<F>,
  summary: string,
  view: OperatorView,
  failure: StepFailure,
  onRetry: (reason: string) => void = () => {},
): Promise<Awaited<ReturnType<F>>> {
  if (failure.handOver) {
    // A bulk call the rate limit held: no retry, its turn. The durable activity waits for it.
    view.flush();
    return step.durable.executeWithOptions({ summary: `${summary} · waits for its turn` }, args);
  }
  log.info('a local attempt failed; the durable activity takes over', {
    step: summary,
    errorType: failure.type ?? undefined,
  });
  const why = `${failure.type ?? 'error'}${failure.message ? ` (${failure.message})` : ''}`;
  const reason = failure.nonRetryable
    ? `first attempt refused: ${why}; the durable attempt records the refusal`
    : `retrying, first attempt failed: ${why}`;
  if (!failure.nonRetryable) onRetry(reason);
  // The timer or the durable activity ends the workflow task: what changed is shown from here on.
  view.flush();
  if (!failure.nonRetryable) {
    await sleep(failure.retryAfterMs ?? step.firstRetryDelay, { summary: `wait, then retry ${summary}` });
  }
  return step.durable.executeWithOptions({ summary: `${summary} · ${reason}` }, args);
}

/** A local attempt's failure as retryDurably reads it (the first pass returns its own, the same shape). */
export function failureOf(error: unknown): StepFailure {
  const failure = applicationFailureOf(error);
  return failure
    ? stepFailureOf(failure)
    : { type: null, message: '', nonRetryable: false, retryAfterMs: null };
}

/** A permanent refusal by the downstream (4xx) or of the target itself: what triggers compensation. */
export function isRefusal(error: unknown): boolean {
  const type = error instanceof ActivityFailure ? applicationFailureOf(error)?.type : undefined;
  return type === ErrorCode.DownstreamRejected || type === ErrorCode.TargetRefused;
}

/** The activity's own failure, whether it arrives wrapped in an ActivityFailure or (local) bare. */
function applicationFailureOf(error: unknown): ApplicationFailure | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure ? cause : undefined;
}
