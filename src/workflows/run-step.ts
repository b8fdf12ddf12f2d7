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
import type { RetryAfterDetails } from '../activities/downstream';
import { ErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../domain/errors';
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
 * Runs a step as a local activity once, and after a failure as the durable activity: at once for a
 * failure no retry can fix (the durable attempt meets the same stored state and fails the same way, so
 * the workflow's failure names the activity), otherwise after the durable retry policy's first interval
 * (or the downstream's Retry-After). `onRetry` runs before a retryable failure's wait. The summary names
 * the step in the UI; the durable activity's summary adds why it runs, so a failed local attempt is
 * never mistaken for a good one.
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
    const failure = applicationFailureOf(error);
    log.info('a local attempt failed; the durable activity takes over', {
      step: summary,
      errorType: failure?.type,
    });
    const why = `${failure?.type ?? 'error'}${failure?.message ? ` (${failure.message})` : ''}`;
    const reason = failure?.nonRetryable
      ? `first attempt refused: ${why}; the durable attempt records the refusal`
      : `retrying, first attempt failed: ${why}`;
    if (!failure?.nonRetryable) onRetry(reason);
    // The timer or the durable activity ends the workflow task: what changed is shown from here on.
    view.flush();
    if (!failure?.nonRetryable) {
      await sleep(retryAfterMs(failure) ?? step.firstRetryDelay, { summary: `wait, then retry ${summary}` });
    }
    return step.durable.executeWithOptions({ summary: `${summary} · ${reason}` }, args);
  }
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

/** A downstream's Retry-After, carried in the failure's details (see failureFor). */
function retryAfterMs(failure: ApplicationFailure | undefined): number | undefined {
  const details = failure?.details?.[0] as Partial<RetryAfterDetails> | undefined;
  return typeof details?.retryAfterMs === 'number' ? details.retryAfterMs : undefined;
}
