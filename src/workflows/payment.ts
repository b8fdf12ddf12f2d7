import { ActivityFailure, ApplicationFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities, OutboxDeliveryResult, ReconcileResult } from '../activities';
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
  const saga = new Saga();
  // Registered before reconcile runs; like every compensation it runs only after a downstream refusal.
  saga.add('reverse ledger entries and flag for review', (reason) =>
    compensatePaymentEffects({ eventId: event.id, reason }),
  );

  const reconciled = await reconcilePayment(event);
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
      saga.add('re-hold the shipment at the carrier', () => reholdShipment({ outboxId: row.outboxId }));
    }
    if (row.status !== 'pending') continue;

    const delivered = await deliverOutboxRow({ outboxId: row.outboxId }).catch((error: unknown) => {
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
  return (
    error instanceof ActivityFailure &&
    error.cause instanceof ApplicationFailure &&
    (error.cause.type === ErrorCode.DownstreamRejected || error.cause.type === ErrorCode.TargetRefused)
  );
}
