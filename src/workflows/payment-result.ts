import type {
  OutboxDeliveryResult,
  OutboxEntry,
  PaymentCompensationResult,
  PaymentWorkflowResult,
  ReconcileResult,
} from '../domain/workflow-contracts';

// The payment workflow's result: each of the event's rows as the run left it.

/** Every deliverable row was delivered (or parked without a target). */
export function deliveredResult(
  reconciled: ReconcileResult,
  deliveries: OutboxDeliveryResult[],
): PaymentWorkflowResult {
  return {
    ...reconciled,
    outbox: finalOutbox(reconciled.outbox, deliveries),
    deliveries,
    compensated: false,
  };
}

/** A downstream refused a row and the earlier steps were undone: `needs_review`. */
export function compensatedResult(
  reconciled: ReconcileResult,
  deliveries: OutboxDeliveryResult[],
  compensation: PaymentCompensationResult | undefined,
): PaymentWorkflowResult {
  const outbox = finalOutbox(reconciled.outbox, deliveries, compensation);
  return {
    ...reconciled,
    outcome: 'needs_review',
    outbox,
    deliveries: deliveries.map((delivery) => ({
      ...delivery,
      status: outbox.find((row) => row.outboxId === delivery.outboxId)?.status ?? delivery.status,
    })),
    compensated: true,
  };
}

/**
 * Each of the event's rows as this run left it: the compensation's own reading of the rows when it ran
 * (it ran last), else the stored status with this run's deliveries applied.
 */
function finalOutbox(
  stored: OutboxEntry[],
  deliveries: OutboxDeliveryResult[],
  compensation?: PaymentCompensationResult,
): OutboxEntry[] {
  if (compensation?.outbox) return compensation.outbox;
  return stored.map((row) => {
    const delivered = deliveries.find((delivery) => delivery.outboxId === row.outboxId);
    return delivered ? { ...row, status: delivered.status } : row;
  });
}
