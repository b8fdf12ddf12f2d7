import { ApplicationFailure, Context } from '@temporalio/activity';
import type { StartedOutboxRow } from '../db/outbox';
import { isDeliverable } from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import {
  stepFailureOf,
  type DeliveryAttempt,
  type OutboxDeliveryResult,
  type OutboxInput,
  type ReconcileAndDeliverResult,
  type ReconcileResult,
  type StepFailure,
} from '../domain/workflow-contracts';
import { annotateSpan, traceStep } from '../tracing/tracing';
import { observeAttempt } from './observe';

/** Room left, past one request's timeout, before a delivery may start: the rest of the step. */
export const DELIVERY_MARGIN_MS = 5_000;

/** The steps the first pass composes: the activities a payment run otherwise schedules one by one. */
export type FirstPassSteps = {
  reconcile(event: PaymentEvent): Promise<ReconcileResult>;
  /** `next`: the row the pass delivers after this one if it delivers, so that its attempt can be started with it. */
  deliver(input: OutboxInput, next?: OutboxInput): Promise<OutboxDeliveryResult>;
  /** Whether a delivery started now is sure to end (its request timeout) before the activity's own. */
  hasTimeFor(): boolean;
};

/**
 * A payment run's first pass, in one local activity: the reconcile, then the first delivery attempt of
 * each of its still-deliverable rows in DELIVERY_TARGETS' order, stopping at the first that fails (the
 * next target is called only after the one before it succeeded, as the step-by-step path does). Each
 * step is exactly the activity it replaces (reconcilePayment, deliverOutboxRow), so the guarantees are
 * theirs: one claim, the row's own Idempotency-Key, the attempt counted on the row before the call.
 *
 * A reconcile that throws fails the first pass, and the workflow hands the event to the durable
 * reconcile. A delivery's failure is returned, not thrown: the workflow hands that row, and the rows
 * after it, to the durable per-row path, with the failure's Retry-After. A row the pass had no time
 * left for has no attempt, and is delivered step by step too.
 */
export async function firstPass(
  event: PaymentEvent,
  steps: FirstPassSteps,
): Promise<ReconcileAndDeliverResult> {
  const reconciled = await steps.reconcile(event);
  const attempts: DeliveryAttempt[] = [];
  if (reconciled.outcome !== 'applied') return { reconciled, attempts };
  const deliverable = reconciled.outbox.filter((row) => isDeliverable(row.status));
  for (const [index, row] of deliverable.entries()) {
    if (!steps.hasTimeFor()) break;
    const next = deliverable[index + 1];
    try {
      const delivered = await steps.deliver({ outboxId: row.outboxId }, next && { outboxId: next.outboxId });
      attempts.push({ outboxId: row.outboxId, delivered });
      // A row its target refused without throwing (`failed`) ends the pass: compensation decides.
      if (delivered.status === 'failed') break;
    } catch (error) {
      attempts.push({ outboxId: row.outboxId, failure: stepFailure(error) });
      break;
    }
  }
  return { reconciled, attempts };
}

/**
 * The activity: firstPass over the worker's own reconcilePayment and deliverOutboxRow, each step
 * logged, counted and traced under its own activity name (activities/observe.ts, Tracing.step).
 */
export function reconcileAndDeliver(
  activities: {
    reconcilePayment(event: PaymentEvent): Promise<ReconcileResult>;
    deliverOutboxRowThenStart(
      input: OutboxInput,
      started?: StartedOutboxRow,
      next?: OutboxInput,
    ): Promise<{ result: OutboxDeliveryResult; nextStarted?: StartedOutboxRow }>;
  },
  requestTimeoutMs: number,
  event: PaymentEvent,
): Promise<ReconcileAndDeliverResult> {
  const { info } = Context.current();
  const deadline = Date.now() + info.startToCloseTimeoutMs;
  annotateSpan({ shipmentId: event.data.shipment_id });
  const step = <T>(activityType: string, run: () => Promise<T>) =>
    traceStep(activityType, () => observeAttempt({ ...info, activityType }, run));
  const hasTimeFor = () => deadline - Date.now() > requestTimeoutMs + DELIVERY_MARGIN_MS;
  // The next row, its attempt counted with the delivered one before it (one statement for both).
  let started: StartedOutboxRow | undefined;
  return firstPass(event, {
    reconcile: (input) => step('reconcilePayment', () => activities.reconcilePayment(input)),
    deliver: (input, next) =>
      step('deliverOutboxRow', async () => {
        const delivered = await activities.deliverOutboxRowThenStart(
          input,
          started,
          hasTimeFor() ? next : undefined,
        );
        started = delivered.nextStarted;
        return delivered.result;
      }),
    // A row started with the one before it had time when it was started (a moment ago).
    hasTimeFor: () => started !== undefined || hasTimeFor(),
  });
}

/** What the workflow needs of a step's failure to hand the step on (the shape written to history). */
export function stepFailure(error: unknown): StepFailure {
  if (error instanceof ApplicationFailure) return stepFailureOf(error);
  return {
    type: null,
    message: error instanceof Error ? error.message : String(error),
    nonRetryable: false,
    retryAfterMs: null,
  };
}
