import {
  ActivityFailure,
  ApplicationFailure,
  defineQuery,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { Activities, OutboxDeliveryResult, ReconcileResult } from '../activities';
import type { RetryAfterDetails } from '../activities/downstream';
import { paymentEventSchema, type PaymentEvent } from '../domain/payment-event';
import { ErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../errors';
import { Saga } from './saga';

export type PaymentWorkflowInput = { event: PaymentEvent };
export type PaymentWorkflowResult = ReconcileResult & {
  /** Each delivery this run made, as it ended (an unset target stays `pending`, `notConfigured`). */
  deliveries: OutboxDeliveryResult[];
  /** True when a downstream refused a step and the earlier steps were undone: outcome `needs_review`. */
  compensated: boolean;
};

/**
 * What this run's reconcile decided (the claim's outcome, and the outbox rows as they stood, which
 * the run then delivers if the outcome is `applied`); null until it has. `settle replay` asks it, so
 * it can answer without waiting for the deliveries. A query adds nothing to the history.
 */
export const reconciledQuery = defineQuery<ReconcileResult | null>('reconciled');

/**
 * Reconcile and the ledger-side compensation are PostgreSQL transactions: they retry without limit on
 * infrastructure failures (PostgreSQL down, a serialization race), and the claim makes every retry safe.
 * Only the codes in NON_RETRYABLE_ERROR_TYPES stop them, and they fail the workflow with that code.
 */
const { reconcilePayment, compensatePaymentEffects } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
});

/**
 * One downstream call per attempt. 5xx, timeouts and unreachable targets retry with backoff, without
 * limit: the idempotency key makes every retry safe, and inspect shows the attempts and last error.
 * A 429/503 Retry-After sets the next delay exactly (nextRetryDelay, above maximumInterval if need be).
 * A 4xx is `downstream_rejected`, non-retryable. The heartbeat notices a vanished worker within 10 s.
 */
const { deliverOutboxRow, reholdShipment } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
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

/** Marks runs that take the fast path; runs started before it replay the durable-only path. */
const LOCAL_FIRST_PATCH = 'payment-steps-local-first';

/**
 * Runs `step` as a local activity once, and after a failure hands it to the durable activity: at once
 * for a failure no retry can fix (the durable attempt meets the same stored state and fails the same
 * way, so the workflow's failure names the activity as before), after `firstRetryDelayMs` (or the
 * downstream's Retry-After) otherwise.
 */
async function locallyFirst<T>(
  step: string,
  runLocally: () => Promise<T>,
  runDurably: () => Promise<T>,
  firstRetryDelayMs: number,
): Promise<T> {
  try {
    return await runLocally();
  } catch (error) {
    const failure = applicationFailureOf(error);
    log.info('a local attempt failed; the durable activity takes over', { step, errorType: failure?.type });
    if (!failure?.nonRetryable) await sleep(retryAfterMs(failure) ?? firstRetryDelayMs);
    return runDurably();
  }
}

/**
 * One payment event, one workflow (ID `payment:<event id>`): reconcile it exactly once, then deliver its
 * outbox rows in order (carrier release, then ERP ledger entry). If a downstream refuses a step, the
 * steps before it are undone newest first: the carrier re-holds the shipment, the event's ledger
 * entries get `reversal` entries and its outcome becomes `needs_review`.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  if (!paymentEventSchema.safeParse(input?.event).success) {
    throw ApplicationFailure.nonRetryable('payment event failed validation', ErrorCode.InvalidWorkflowInput);
  }
  const { event } = input;
  let decided: ReconcileResult | null = null;
  setHandler(reconciledQuery, () => decided);
  const saga = new Saga();
  // Registered before reconcile runs; like every compensation it runs only after a downstream refusal.
  saga.add('reverse ledger entries and flag for review', (reason) =>
    compensatePaymentEffects({ eventId: event.id, reason }),
  );

  const localFirst = patched(LOCAL_FIRST_PATCH);
  const reconcile = () => reconcilePayment(event);
  const reconciled = localFirst
    ? await locallyFirst('reconcile', () => local.reconcilePayment(event), reconcile, 500)
    : await reconcile();
  decided = reconciled;
  log.info('payment event reconciled', {
    eventType: event.type,
    shipmentId: event.data.shipment_id,
    outcome: reconciled.outcome,
    claimExisted: reconciled.claimExisted,
  });
  const deliveries: OutboxDeliveryResult[] = [];
  if (reconciled.outcome !== 'applied') return { ...reconciled, deliveries, compensated: false };

  for (const row of reconciled.outbox) {
    // A release delivered by an earlier run is undone too if this run's later step is refused.
    if (row.target === 'carrier' && (row.status === 'pending' || row.status === 'delivered')) {
      saga.add('re-hold the shipment at the carrier', () =>
        reholdShipment({ outboxId: row.outboxId, eventId: event.id }),
      );
    }
    if (row.status !== 'pending') continue;

    const input = { outboxId: row.outboxId, eventId: event.id };
    const deliver = () => deliverOutboxRow(input);
    const delivery = localFirst
      ? locallyFirst(`deliver to ${row.target}`, () => local.deliverOutboxRow(input), deliver, 1_000)
      : deliver();
    const delivered = await delivery.catch((error: unknown) => {
      if (isRefusal(error)) return undefined;
      throw error;
    });
    if (delivered && delivered.status !== 'failed') {
      deliveries.push(delivered);
      continue;
    }
    deliveries.push({ outboxId: row.outboxId, target: row.target, action: row.action, status: 'failed' });
    const reason = `the ${row.target} refused ${row.action}; the flow was compensated`;
    log.warn('a downstream refused a step; compensating the earlier steps', {
      shipmentId: event.data.shipment_id,
      target: row.target,
      action: row.action,
    });
    await saga.compensate(reason);
    return { ...reconciled, outcome: 'needs_review', deliveries, compensated: true };
  }
  return { ...reconciled, deliveries, compensated: false };
}

/** A permanent refusal by the downstream (4xx) or of the target itself: what triggers compensation. */
function isRefusal(error: unknown): boolean {
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
