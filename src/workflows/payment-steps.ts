import { log } from '@temporalio/workflow';
import type { PaymentEvent } from '../domain/payment-event';
import type {
  DeliveryAttempt,
  OutboxDeliveryResult,
  OutboxEntry,
  OutboxInput,
  ReconcileAndDeliverResult,
  ReconcileResult,
} from '../domain/workflow-contracts';
import type { OperatorView } from './operator-view';
import {
  DELIVER,
  failureOf,
  isRefusal,
  RECONCILE,
  RECONCILE_AND_DELIVER,
  retryDurably,
  runStep,
} from './run-step';

// The payment workflow's steps as payment.ts tells them: each one logged and shown in the run's view.

/** A delivery the first pass tried and could not complete: the step's durable activity takes it over. */
export type FailedAttempt = Extract<DeliveryAttempt, { failure: unknown }>;

/**
 * Reconciles the event: with `firstPass`, in one local activity that also makes each row's first
 * delivery (its attempts are returned); otherwise as a step of its own. When the first pass throws (its
 * reconcile failed, or its worker lost it), the reconcile goes to the durable activity and every row is
 * delivered step by step: a delivery follows a committed reconcile, so the durable reconcile finds the
 * claim and the rows as they stand, and nothing the pass sent is sent twice.
 */
export async function reconcileEvent(
  event: PaymentEvent,
  view: OperatorView,
  firstPass: boolean,
): Promise<ReconcileAndDeliverResult> {
  const summary = `reconcile ${event.type} · ${event.data.shipment_id}`;
  if (!firstPass) return { reconciled: await runStep(RECONCILE, [event], summary, view), attempts: [] };
  try {
    return await RECONCILE_AND_DELIVER.executeWithOptions({ summary: `${summary}, then deliver` }, [event]);
  } catch (error) {
    return {
      reconciled: await retryDurably(RECONCILE, [event], summary, view, failureOf(error)),
      attempts: [],
    };
  }
}

/** What the reconcile decided, logged and shown in the run's view. */
export function reportReconciled(
  event: PaymentEvent,
  view: OperatorView,
  reconciled: ReconcileResult,
): ReconcileResult {
  log.info('payment event reconciled', {
    eventType: event.type,
    shipmentId: event.data.shipment_id,
    outcome: reconciled.outcome,
    claimExisted: reconciled.claimExisted,
  });
  view.outcome(reconciled.outcome);
  return reconciled;
}

/** The first pass's attempt at a row, if it made one. */
export function firstPassAttempt(
  first: ReconcileAndDeliverResult,
  row: OutboxEntry,
): DeliveryAttempt | undefined {
  return first.attempts.find((tried) => tried.outboxId === row.outboxId);
}

/** A row the first pass delivered: its result stands for the step's. */
export function takeFirstPassDelivery(
  event: PaymentEvent,
  row: OutboxEntry,
  view: OperatorView,
  delivered: OutboxDeliveryResult,
): OutboxDeliveryResult {
  delivering(row, view);
  return asTheRunCountsIt(event, row, delivered);
}

/**
 * One row's delivery as a step; status `failed` when the downstream refused it for good (compensate).
 * The first pass's failed attempt at it, when there was one, stands for the step's local attempt and
 * sends the row to the durable activity.
 */
export async function deliverRow(
  event: PaymentEvent,
  row: OutboxEntry,
  view: OperatorView,
  attempt: FailedAttempt | undefined,
): Promise<OutboxDeliveryResult> {
  const summary = delivering(row, view);
  const args: [OutboxInput] = [{ outboxId: row.outboxId }];
  const onRetry = (reason: string) => view.deliveryState('retrying', `${summary}: ${reason}`);
  const delivered = await (
    attempt
      ? retryDurably(DELIVER, args, summary, view, attempt.failure, onRetry)
      : runStep(DELIVER, args, summary, view, onRetry)
  ).catch((error: unknown) => {
    if (isRefusal(error)) return refused(row);
    throw error;
  });
  return asTheRunCountsIt(event, row, delivered);
}

/** Shows the row as being delivered in the run's view; the step's name (its summary in the UI). */
function delivering(row: OutboxEntry, view: OperatorView): string {
  const summary = `${row.target} ${row.action}`;
  view.deliveryState('delivering', `${summary}: sending`);
  return summary;
}

/** A row's delivery result: a failure counts as a refusal; a target with no URL is parked, with a warning. */
function asTheRunCountsIt(
  event: PaymentEvent,
  row: OutboxEntry,
  delivered: OutboxDeliveryResult,
): OutboxDeliveryResult {
  if (delivered.status === 'failed') return refused(row);
  if (delivered.status === 'not_configured') {
    log.warn('a delivery has no target URL on this worker; it is parked as not_configured', {
      shipmentId: event.data.shipment_id,
      target: row.target,
      action: row.action,
    });
  }
  return delivered;
}

function refused(row: OutboxEntry): OutboxDeliveryResult {
  return { outboxId: row.outboxId, target: row.target, action: row.action, status: 'failed' };
}
