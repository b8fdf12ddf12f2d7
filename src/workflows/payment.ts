import { ApplicationFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities, ReconcileResult } from '../activities';
import { paymentEventSchema, type PaymentEvent } from '../domain/payment-event';
import { ErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../errors';

export type PaymentWorkflowInput = { event: PaymentEvent };
export type PaymentWorkflowResult = ReconcileResult;

/**
 * The reconcile activity retries without limit on infrastructure failures (PostgreSQL down, a
 * serialization race): its claim makes every retry safe. Only the codes in NON_RETRYABLE_ERROR_TYPES
 * stop it, and they fail the workflow with that code.
 */
const { reconcilePayment } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
});

/** One payment event, one workflow (ID `payment:<event id>`): reconcile it exactly once. */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  if (!paymentEventSchema.safeParse(input?.event).success) {
    throw ApplicationFailure.nonRetryable('payment event failed validation', ErrorCode.InvalidWorkflowInput);
  }
  const { event } = input;
  const result = await reconcilePayment(event);
  log.info('payment event reconciled', {
    eventType: event.type,
    shipmentId: event.data.shipment_id,
    outcome: result.outcome,
    claimExisted: result.claimExisted,
  });
  return result;
}
