import { ApplicationFailure, Context } from '@temporalio/activity';
import { logger } from '../lib/logger';
import { shortHash } from '../lib/hash';
import {
  findOutboxRow,
  markOutboxDelivered,
  markOutboxNotConfigured,
  recordOutboxError,
  startOutboxAttempt,
  type OutboxRow,
  type StartedOutboxRow,
} from '../db/outbox';
import { ErrorCode } from '../domain/errors';
import {
  deliveryTarget,
  isDeliverable,
  OUTBOX_TARGETS,
  callAudience,
  targetEndpoint,
  type OutboxStatus,
  type OutboxTarget,
} from '../domain/outbox';
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
import {
  callDownstream,
  countDelivery,
  failureFor,
  targetCallPolicy,
  type DeliveryDependencies,
} from './downstream';
import { enterTarget, leaveTarget } from './target-gate';
import { annotateSpan, traceStep } from '../tracing/tracing';
import { observeAttempt } from './observe';
import { paymentWorkflowId } from '../domain/ids';
import { actOnlyFor, eventOfCurrentRun } from './run-subject';

/**
 * Delivers one outbox row: one call per attempt, with the row's `Idempotency-Key`, identical on every
 * retry, so the receiver can refuse a repeat of an ambiguous call, and signed (Standard Webhooks, the
 * `webhook-id` being that key) with the first of the target's secrets, else SETTLE_OUTBOUND_SECRET's.
 * Every attempt is counted on the row before it is made and its failure recorded after. A 2xx marks
 * it `delivered` (a target that `releasesShipment` also marks the shipment `released`); a refusal (a
 * 4xx from an `internal` target, targetCallPolicy) marks it `failed` and throws non-retryable
 * `downstream_rejected`; 5xx, timeouts and 429/503 (with their Retry-After) throw retryable failures.
 * The URL may reach private addresses when the target's `network` is `private`. A target with no URL or no signing secret on this worker parks the row as
 * `not_configured` (an exception, logged at warn): a replay delivers it once the target is configured.
 * Each call passes its target's gate first (target-gate.ts): its limits, a pause or a failing target
 * hold it as a retryable `downstream_throttled` failure, with no call made and no attempt counted.
 */
export async function deliverOutboxRow(
  deps: DeliveryDependencies,
  input: OutboxInput,
): Promise<OutboxDeliveryResult> {
  return (await deliverOutboxRowThenStart(deps, input)).result;
}

/**
 * deliverOutboxRow as the first pass runs it along an event's rows: `started` is this row as the
 * delivery before it returned it, its attempt counted already; `next`, the row to deliver after it,
 * whose attempt is counted with this one's `delivered` (one statement for both) and returned as
 * `nextStarted`, ready to be sent. Undefined when this row did not deliver, or `next` was not started
 * (no longer pending, or its target is not configured here): deliverOutboxRow then says why.
 */
export async function deliverOutboxRowThenStart(
  deps: DeliveryDependencies,
  input: OutboxInput,
  started?: StartedOutboxRow,
  next?: OutboxInput,
): Promise<{ result: OutboxDeliveryResult; nextStarted?: StartedOutboxRow }> {
  const configured = OUTBOX_TARGETS.filter((target) => isConfigured(deps, target));
  // Only a row of the event this run's workflow ID names is attempted; another's is refused below.
  const eventId = eventOfCurrentRun();
  // The common path is one statement: the attempt is counted and the row read together.
  const row =
    started?.outboxId === input.outboxId
      ? started
      : await startOutboxAttempt(deps.pool, input.outboxId, configured, eventId);
  if (!row) return { result: await notAttempted(deps, input.outboxId) };
  // Only a configured target's row is attempted (startOutboxAttempt picks by `configured`).
  const endpoint = targetEndpoint(deps.config, row.target) as { url: string; signingSecret: string };
  const call = targetCallPolicy(deps.config, deliveryTarget(row.target));
  annotateSpan({ shipmentId: row.shipmentId });
  const gate = { pool: deps.pool, config: deps.config, requestTimeoutMs: deps.tuning.requestTimeoutMs };
  const pass = await enterTarget(gate, row.target, row.targetTroubled, row.outboxId);

  const called = await callDownstream(
    deps.http,
    {
      url: endpoint.url,
      idempotencyKey: row.idempotencyKey,
      signingSecret: endpoint.signingSecret,
      audience: callAudience({ target: row.target }),
      body: { action: row.action, ...row.body },
      timeoutMs: deps.tuning.requestTimeoutMs,
      allowPrivateTargets: call.allowPrivateTargets,
    },
    call.policy,
  );
  countDelivery(row.target, row.action, called);
  const outcome = await leaveTarget(gate, row.target, pass, called);
  if (outcome.kind === 'delivered') {
    const release = deliveryTarget(row.target).releasesShipment;
    const nextStarted = await markOutboxDelivered(
      deps.pool,
      row.outboxId,
      release ? row.shipmentId : undefined,
      next && { outboxId: next.outboxId, targets: configured, eventId },
    );
    return { result: resultFor(row, 'delivered'), nextStarted };
  }
  await recordOutboxError(
    deps.pool,
    row.outboxId,
    outcome.detail,
    outcome.kind === 'permanent' ? 'failed' : 'pending',
  );
  throw failureFor(outcome);
}

/** A row that was not attempted: gone, no longer pending, or its target has no URL on this worker. */
async function notAttempted(deps: DeliveryDependencies, outboxId: number): Promise<OutboxDeliveryResult> {
  const row = await findOutboxRow(deps.pool, outboxId);
  if (!row) throw ApplicationFailure.nonRetryable('no such outbox row', ErrorCode.InvalidWorkflowInput);
  actOnlyFor(paymentWorkflowId(row.eventId), 'deliverOutboxRow');
  if (!isDeliverable(row.status)) return resultFor(row, row.status);
  // Its target is configured: the row left `pending` between the two statements and is back (a race).
  const endpoint = targetEndpoint(deps.config, row.target);
  if (!('missing' in endpoint)) return resultFor(row, row.status);
  const variable = endpoint.missing;
  await markOutboxNotConfigured(deps.pool, row.outboxId, `not sent: ${variable} is not configured`);
  countDelivery(row.target, row.action, 'not_configured');
  logger.warn(
    { event: shortHash(row.eventId), target: row.target, action: row.action, variable },
    'delivery not sent: its target has no URL or no signing secret on this worker; parked as not_configured',
  );
  return resultFor(row, 'not_configured');
}

/** A target this worker can call: it has a URL and a secret to sign with (no call goes unsigned). */
function isConfigured(deps: DeliveryDependencies, target: OutboxTarget): boolean {
  return !('missing' in targetEndpoint(deps.config, target));
}

function resultFor(row: OutboxRow, status: OutboxStatus): OutboxDeliveryResult {
  return { outboxId: row.outboxId, target: row.target, action: row.action, status };
}

// The first pass: the reconcile, then each row's first delivery, in one local activity.

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
    /** The reconcile, a new claim's first row stored with its attempt counted (`started`). */
    reconcilePaymentThenStart(
      event: PaymentEvent,
    ): Promise<{ result: ReconcileResult; started?: StartedOutboxRow }>;
    /** Takes back the attempt of a row started but not sent. */
    releaseOutboxAttempt(outboxId: number): Promise<void>;
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
  // The next row, its attempt counted with the statement before it: the reconcile's for the first
  // row, the delivered one's for each row after it.
  let started: StartedOutboxRow | undefined;
  return firstPass(event, {
    reconcile: (input) =>
      step('reconcilePayment', async () => {
        const reconciled = await activities.reconcilePaymentThenStart(input);
        started = reconciled.started;
        // A reconcile that left no time to call: the row goes on step by step, its attempt not made.
        if (started && !hasTimeFor()) {
          await activities.releaseOutboxAttempt(started.outboxId);
          started = undefined;
        }
        return reconciled.result;
      }),
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
