import { defineQuery, log, setHandler } from '@temporalio/workflow';
import { deliveryTarget, isDeliverable } from '../domain/outbox';
import { isPaymentEvent } from '../domain/payment-event-shape';
import type {
  OutboxDeliveryResult,
  PaymentCompensationResult,
  PaymentWorkflowInput,
  PaymentWorkflowResult,
  ReconcileResult,
} from '../domain/workflow-contracts';
import { refuseInvalidInput } from './invalid-input';
import { OperatorView, storedDeliveryState } from './operator-view';
import { compensatedResult, deliveredResult } from './payment-result';
import { runShape } from './payment-shape';
import {
  deliverRow,
  firstPassAttempt,
  reconcileEvent,
  reportReconciled,
  takeFirstPassDelivery,
} from './payment-steps';
import { transactions, undoDelivery } from './run-step';
import { Saga } from './saga';

export type { PaymentWorkflowInput, PaymentWorkflowResult } from '../domain/workflow-contracts';

/**
 * What this run's reconcile decided (the claim's outcome, and the outbox rows as they stood, which
 * the run then delivers if the outcome is `applied`); null until it has. `settle replay` asks it, so
 * it can answer without waiting for the deliveries. A query adds nothing to the history.
 */
export const reconciledQuery = defineQuery<ReconcileResult | null>('reconciled');

/**
 * One payment event, one workflow (ID `payment:<event id>`): reconcile it exactly once, then deliver its
 * outbox rows in DELIVERY_TARGETS' order (carrier release, then ERP ledger entry). If a downstream
 * refuses a step, the steps before it are undone newest first: the carrier re-holds the shipment, the
 * event's ledger entries get `reversal` entries and its outcome becomes `needs_review`.
 *
 * The event is validated here, once, as the run's input: a run can be started around settle's door
 * (Temporal's frontend takes any input), so the workflow is a trust boundary and refuses a malformed
 * event before any step (no zod in the bundle: payment-event-shape.ts accepts exactly what the door's
 * schema accepts). The activities take the validated type; reconcile's stored-payload check then
 * refuses an event the door never stored (unadmitted_run). A run refused on its input records itself
 * first (invalid-input.ts), so it is an unadmitted_run too.
 *
 * Beside it: the patch gates (payment-shape.ts), the steps (payment-steps.ts, run-step.ts), what an
 * operator sees (operator-view.ts) and the result (payment-result.ts).
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  if (!isPaymentEvent(input?.event)) return refuseInvalidInput(input, 'payment event failed validation');
  const { event } = input;
  let reconciled: ReconcileResult | null = null; // what reconciledQuery answers
  setHandler(reconciledQuery, () => reconciled);
  const shape = runShape();
  const view = new OperatorView(shape.view);
  const saga = new Saga();
  try {
    // Registered before reconcile runs; like every compensation it runs only after a downstream refusal.
    let compensation: PaymentCompensationResult | undefined;
    saga.add('reverse ledger entries and flag for review', async (reason) => {
      compensation = await transactions.compensatePaymentEffects.executeWithOptions(
        { summary: 'compensate: reverse ledger entries, outcome needs_review' },
        [{ eventId: event.id, reason }],
      );
    });

    // 1. Reconcile: claim the event and apply its effect in one transaction; in the first pass, with
    //    each row's first delivery after it.
    const firstPass = await reconcileEvent(event, view, shape.firstPass);
    reconciled = reportReconciled(event, view, firstPass.reconciled);
    if (reconciled.outcome !== 'applied') {
      view.deliveryState(storedDeliveryState(reconciled.outbox));
      return { ...reconciled, deliveries: [], compensated: false };
    }

    // 2. Deliver each outbox row in order.
    const deliveries: OutboxDeliveryResult[] = [];
    for (const row of reconciled.outbox) {
      // A row its target can undo (DELIVERY_TARGETS' `undo`) is undone if a later step is refused,
      // one an earlier run delivered too.
      const undo = deliveryTarget(row.target).undo;
      if (undo && (isDeliverable(row.status) || row.status === 'delivered')) {
        saga.add(undo.step, () =>
          undoDelivery.executeWithOptions({ summary: undo.summary }, [{ outboxId: row.outboxId }]),
        );
      }
      if (!isDeliverable(row.status)) continue;
      const attempt = firstPassAttempt(firstPass, row);
      // A row the first pass delivered takes no step and no await: the sandbox captures a stack trace
      // for every promise a run creates.
      const delivery =
        attempt && 'delivered' in attempt
          ? takeFirstPassDelivery(event, row, view, attempt.delivered)
          : await deliverRow(event, row, view, attempt);
      deliveries.push(delivery);
      if (delivery.status !== 'failed') continue;

      // 3. Compensate: the downstream refused this row for good; undo the steps before it, newest first.
      const reason = `the ${row.target} refused ${row.action}; the flow was compensated`;
      log.warn('a downstream refused a step; compensating the earlier steps', {
        shipmentId: event.data.shipment_id,
        target: row.target,
        action: row.action,
      });
      view.flush();
      await saga.compensate(reason);
      view.outcome('needs_review');
      view.deliveryState('compensated', `needs review: ${reason}`);
      return compensatedResult(reconciled, deliveries, compensation);
    }

    // 4. The outcome: every row delivered, or parked where its target has no URL.
    const result = deliveredResult(reconciled, deliveries);
    view.deliveryState(storedDeliveryState(result.outbox));
    return result;
  } finally {
    view.flush();
  }
}
