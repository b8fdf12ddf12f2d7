import { defineQuery, log, patched, setHandler } from '@temporalio/workflow';
import { deliveryTarget, isDeliverable } from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import { isPaymentEvent } from '../domain/payment-event-shape';
import type {
  DeliveryAttempt,
  OutboxDeliveryResult,
  OutboxEntry,
  PaymentCompensationResult,
  PaymentWorkflowInput,
  PaymentWorkflowResult,
  ReconcileAndDeliverResult,
  ReconcileResult,
} from '../domain/workflow-contracts';
import {
  COALESCE_SEARCH_ATTRIBUTES_PATCH,
  EXCEPTIONS_ONLY_VIEW_PATCH,
  OperatorView,
  storedDeliveryState,
  type ViewShape,
} from './operator-view';
import { refuseInvalidInput } from './invalid-input';
import {
  DELIVER,
  downstream,
  failureOf,
  FIRST_PASS,
  isRefusal,
  RECONCILE,
  retryDurably,
  runStep,
  transactions,
} from './run-step';
import { Saga } from './saga';

export type { PaymentWorkflowInput, PaymentWorkflowResult } from '../domain/workflow-contracts';

/**
 * The patch that runs the reconcile and each row's first delivery as one local activity, the first
 * pass (one marker, one activation), in place of one local activity per step. It implies the
 * coalesce-search-attributes patch, which a patched run therefore never asks for: each patch is a
 * marker and an upsert of TemporalChangeVersion, two history events per run. Runs started before it
 * replay the path they recorded (test/histories/reconcile-and-deliver/ and coalesce-search-attributes/).
 */
export const FIRST_PASS_PATCH = 'reconcile-and-deliver';

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
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  if (!isPaymentEvent(input?.event)) return refuseInvalidInput(input, 'payment event failed validation');
  const { event } = input;
  let decided: ReconcileResult | null = null;
  setHandler(reconciledQuery, () => decided);
  const shape = runShape();
  const view = new OperatorView(shape.view);
  try {
    return await settlePayment(event, view, shape.firstPass, (result) => (decided = result));
  } finally {
    view.flush();
  }
}

/**
 * The shape of this run, by the patches its history carries: each newer patch implies the older ones,
 * so a run started today records one marker. Runs started before a patch replay the path they recorded
 * (docs/deployment.md, "Upgrades", says which runs that protects).
 */
function runShape(): { firstPass: boolean; view: ViewShape } {
  if (patched(EXCEPTIONS_ONLY_VIEW_PATCH)) return { firstPass: true, view: 'exceptions' };
  if (patched(FIRST_PASS_PATCH)) return { firstPass: true, view: 'coalesced' };
  // Runs started before the coalesce patch upserted each attribute as it changed (one action per command).
  return { firstPass: false, view: patched(COALESCE_SEARCH_ATTRIBUTES_PATCH) ? 'coalesced' : 'per-change' };
}

/** Reconcile → deliver → compensate, with each compensation pushed before the step it undoes. */
async function settlePayment(
  event: PaymentEvent,
  view: OperatorView,
  firstPassShape: boolean,
  onDecided: (result: ReconcileResult) => void,
): Promise<PaymentWorkflowResult> {
  const saga = new Saga();
  let compensation: PaymentCompensationResult | undefined;
  // Registered before reconcile runs; like every compensation it runs only after a downstream refusal.
  saga.add('reverse ledger entries and flag for review', async (reason) => {
    compensation = await transactions.compensatePaymentEffects.executeWithOptions(
      { summary: 'compensate: reverse ledger entries, outcome needs_review' },
      [{ eventId: event.id, reason }],
    );
  });

  // 1. Reconcile: claim the event and apply its effect in one transaction; in the first pass, with
  // the first delivery of each row after it.
  const first = firstPassShape ? await firstPass(event, view) : undefined;
  const reconciled = decided(event, view, first?.reconciled ?? (await reconcile(event, view)));
  onDecided(reconciled);
  const deliveries: OutboxDeliveryResult[] = [];
  if (reconciled.outcome !== 'applied') {
    view.deliveryState(storedDeliveryState(reconciled.outbox));
    return { ...reconciled, deliveries, compensated: false };
  }

  // 2. Deliver each outbox row in order.
  for (const row of reconciled.outbox) {
    // A row its target can undo (DELIVERY_TARGETS' `undo`) is undone if a later step is refused,
    // one an earlier run delivered too. The activity keeps its recorded name, reholdShipment.
    const undo = deliveryTarget(row.target).undo;
    if (undo && (isDeliverable(row.status) || row.status === 'delivered')) {
      saga.add(undo.step, () =>
        downstream.reholdShipment.executeWithOptions({ summary: undo.summary }, [{ outboxId: row.outboxId }]),
      );
    }
    if (!isDeliverable(row.status)) continue;
    const attempt = first?.attempts.find((tried) => tried.outboxId === row.outboxId);
    // A row the first pass delivered takes no step, and no await: the sandbox captures a stack trace
    // for every promise a run creates, which made them a tenth of the workflow code's CPU per event.
    const delivered =
      attempt && 'delivered' in attempt
        ? deliveredByFirstPass(event, row, view, attempt.delivered)
        : await deliver(event, row, view, attempt);
    if (delivered) {
      deliveries.push(delivered);
      continue;
    }

    // 3. Compensate: the downstream refused this row; undo the steps before it, newest first.
    deliveries.push({ outboxId: row.outboxId, target: row.target, action: row.action, status: 'failed' });
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
    const outbox = finalOutbox(reconciled.outbox, deliveries, compensation);
    return {
      ...reconciled,
      outcome: 'needs_review',
      outbox,
      deliveries: withFinalStatus(deliveries, outbox),
      compensated: true,
    };
  }
  const outbox = finalOutbox(reconciled.outbox, deliveries);
  view.deliveryState(storedDeliveryState(outbox));
  return { ...reconciled, outbox, deliveries, compensated: false };
}

/**
 * The first pass: the reconcile and each row's first delivery. When it throws (its reconcile failed,
 * or its worker lost it), the reconcile goes to the durable activity as a failed local one does, and
 * every row is delivered step by step: a delivery follows a committed reconcile, so the durable
 * reconcile finds the claim and the rows as they stand, and nothing the pass sent is sent twice.
 */
async function firstPass(event: PaymentEvent, view: OperatorView): Promise<ReconcileAndDeliverResult> {
  const summary = reconcileSummary(event);
  try {
    return await FIRST_PASS.executeWithOptions({ summary: `${summary}, then deliver` }, [event]);
  } catch (error) {
    return {
      reconciled: await retryDurably(RECONCILE, [event], summary, view, failureOf(error)),
      attempts: [],
    };
  }
}

function reconcileSummary(event: PaymentEvent): string {
  return `reconcile ${event.type} · ${event.data.shipment_id}`;
}

/** The reconcile as a step of its own: a run in the shape before the first pass, or after it threw. */
function reconcile(event: PaymentEvent, view: OperatorView): Promise<ReconcileResult> {
  return runStep(RECONCILE, [event], reconcileSummary(event), view);
}

/** What the reconcile decided, logged and shown in the run's view. */
function decided(event: PaymentEvent, view: OperatorView, reconciled: ReconcileResult): ReconcileResult {
  log.info('payment event reconciled', {
    eventType: event.type,
    shipmentId: event.data.shipment_id,
    outcome: reconciled.outcome,
    claimExisted: reconciled.claimExisted,
  });
  view.outcome(reconciled.outcome);
  return reconciled;
}

/**
 * One row's delivery as a step: its result, or undefined when the downstream refused it (compensate).
 * The first pass's failed attempt at it, when there was one, stands for the step's local attempt and
 * sends the row to the durable activity.
 */
async function deliver(
  event: PaymentEvent,
  row: OutboxEntry,
  view: OperatorView,
  attempt: Extract<DeliveryAttempt, { failure: unknown }> | undefined,
): Promise<OutboxDeliveryResult | undefined> {
  const summary = delivering(row, view);
  const args: [{ outboxId: number }] = [{ outboxId: row.outboxId }];
  const onRetry = (reason: string) => view.deliveryState('retrying', `${summary}: ${reason}`);
  const delivered = await (
    attempt
      ? retryDurably(DELIVER, args, summary, view, attempt.failure, onRetry)
      : runStep(DELIVER, args, summary, view, onRetry)
  ).catch((error: unknown) => {
    if (isRefusal(error)) return undefined;
    throw error;
  });
  return delivered && accepted(event, row, delivered);
}

/** A row the first pass delivered: its result stands for the step's. */
function deliveredByFirstPass(
  event: PaymentEvent,
  row: OutboxEntry,
  view: OperatorView,
  delivered: OutboxDeliveryResult,
): OutboxDeliveryResult | undefined {
  delivering(row, view);
  return accepted(event, row, delivered);
}

/** Shows the row as being delivered in the run's view; the step's name (its summary in the UI). */
function delivering(row: OutboxEntry, view: OperatorView): string {
  const summary = `${row.target} ${row.action}`;
  view.deliveryState('delivering', `${summary}: sending`);
  return summary;
}

/** A row's delivery result, or undefined when it failed (compensate). */
function accepted(
  event: PaymentEvent,
  row: OutboxEntry,
  delivered: OutboxDeliveryResult,
): OutboxDeliveryResult | undefined {
  if (delivered.status === 'failed') return undefined;
  if (delivered.status === 'not_configured') {
    log.warn('a delivery has no target URL on this worker; it is parked as not_configured', {
      shipmentId: event.data.shipment_id,
      target: row.target,
      action: row.action,
    });
  }
  return delivered;
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

function withFinalStatus(deliveries: OutboxDeliveryResult[], outbox: OutboxEntry[]): OutboxDeliveryResult[] {
  return deliveries.map((delivery) => ({
    ...delivery,
    status: outbox.find((row) => row.outboxId === delivery.outboxId)?.status ?? delivery.status,
  }));
}
