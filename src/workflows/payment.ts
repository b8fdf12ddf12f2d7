import {
  ActivityFailure,
  type ActivityFunction,
  type ActivityFunctionWithOptions,
  type LocalActivityFunctionWithOptions,
  ApplicationFailure,
  defineQuery,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Duration, SearchAttributeUpdatePair } from '@temporalio/common';
import type { Activities } from '../activities';
import type { RetryAfterDetails } from '../activities/downstream';
import { deliveryTarget, isDeliverable } from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import { isPaymentEvent } from '../domain/payment-event-shape';
import {
  SettleDeliveryStateKey,
  SettleOutcomeKey,
  START_DELIVERY_STATE,
  type DeliveryState,
} from '../domain/search-attributes';
import { ErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../domain/errors';
import type {
  OutboxDeliveryResult,
  OutboxEntry,
  PaymentCompensationResult,
  PaymentWorkflowInput,
  PaymentWorkflowResult,
  ReconcileResult,
} from './contracts';
import { Saga } from './saga';

export type { PaymentWorkflowInput, PaymentWorkflowResult } from './contracts';

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
const TRANSACTION_RETRY = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
} as const;
const transactions = proxyActivities<Activities>({
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
const downstream = proxyActivities<Activities>({
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
const RECONCILE: Step<Activities['reconcilePayment']> = {
  local: local.reconcilePayment,
  durable: transactions.reconcilePayment,
  firstRetryDelay: TRANSACTION_RETRY.initialInterval,
};
const DELIVER: Step<Activities['deliverOutboxRow']> = {
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
async function runStep<F extends ActivityFunction>(
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

/**
 * One payment event, one workflow (ID `payment:<event id>`): reconcile it exactly once, then deliver its
 * outbox rows in order (carrier release, then ERP ledger entry). If a downstream refuses a step, the
 * steps before it are undone newest first: the carrier re-holds the shipment, the event's ledger
 * entries get `reversal` entries and its outcome becomes `needs_review`.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  if (!isPaymentEvent(input?.event)) {
    throw ApplicationFailure.nonRetryable('payment event failed validation', ErrorCode.InvalidWorkflowInput);
  }
  const { event } = input;
  let decided: ReconcileResult | null = null;
  setHandler(reconciledQuery, () => decided);
  // Runs started before this change upserted each attribute as it changed (one action per command).
  const view = new OperatorView(patched(COALESCE_SEARCH_ATTRIBUTES_PATCH));
  try {
    return await reconcileAndDeliver(event, view, (result) => (decided = result));
  } finally {
    view.flush();
  }
}

async function reconcileAndDeliver(
  event: PaymentEvent,
  view: OperatorView,
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

  const reconciled = await runStep(
    RECONCILE,
    [event],
    `reconcile ${event.type} · ${event.data.shipment_id}`,
    view,
  );
  onDecided(reconciled);
  log.info('payment event reconciled', {
    eventType: event.type,
    shipmentId: event.data.shipment_id,
    outcome: reconciled.outcome,
    claimExisted: reconciled.claimExisted,
  });
  view.outcome(reconciled.outcome);
  const deliveries: OutboxDeliveryResult[] = [];
  if (reconciled.outcome !== 'applied') {
    view.deliveryState(storedDeliveryState(reconciled.outbox));
    return { ...reconciled, deliveries, compensated: false };
  }

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

    const summary = `${row.target} ${row.action}`;
    view.deliveryState('delivering', `${summary}: sending`);
    const delivered = await runStep(DELIVER, [{ outboxId: row.outboxId }], summary, view, (reason) =>
      view.deliveryState('retrying', `${summary}: ${reason}`),
    ).catch((error: unknown) => {
      if (isRefusal(error)) return undefined;
      throw error;
    });
    if (delivered && delivered.status !== 'failed') {
      deliveries.push(delivered);
      if (delivered.status === 'not_configured') {
        log.warn('a delivery has no target URL on this worker; it is parked as not_configured', {
          shipmentId: event.data.shipment_id,
          target: row.target,
          action: row.action,
        });
      }
      continue;
    }
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

/** The patch that sends a workflow task's search-attribute changes as one upsert command. */
const COALESCE_SEARCH_ATTRIBUTES_PATCH = 'coalesce-search-attributes';

/**
 * What an operator sees of a run in the Temporal UI: the search attributes SettleOutcome and
 * SettleDeliveryState and the run's current details. Activity summaries are set where each activity runs.
 *
 * Each upsert command is a billable action (https://docs.temporal.io/cloud/actions: one per command,
 * however many attributes it carries), and the server applies a task's commands only when the task
 * completes, so changes made within one workflow task are never seen one by one. So the view collects
 * the changes and `flush` sends them as one command before the workflow waits on the server (a timer,
 * a durable activity, the compensation) and when it ends; local activities run inside the task and do
 * not flush. A happy run thus upserts once (outcome and `delivered`), a retrying run shows `retrying`
 * during its wait. Only a local step outliving the task's heartbeat (about 8 s) shows the start's
 * `pending` until the task ends. Unpatched (runs started before the change): one command per change,
 * as they were recorded.
 */
class OperatorView {
  private state: DeliveryState | null | undefined;
  /** What the run's attributes hold on the server: the start's, then each flush's. */
  private readonly shown = new Map<string, string | null>([
    [SettleDeliveryStateKey.name, START_DELIVERY_STATE],
  ]);
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();

  constructor(private readonly coalesce: boolean) {}

  outcome(outcome: PaymentWorkflowResult['outcome']): void {
    this.set({ key: SettleOutcomeKey, value: outcome });
    setCurrentDetails(`outcome ${outcome}`);
  }

  deliveryState(state: DeliveryState | null, details?: string): void {
    if (state !== this.state) this.set({ key: SettleDeliveryStateKey, value: state });
    this.state = state;
    setCurrentDetails(details ?? (state ? `deliveries ${state}` : 'nothing to deliver'));
  }

  /** Sends the changes not yet shown as one upsert command (none if nothing changed). */
  flush(): void {
    const changed = [...this.pending.values()].filter((pair) => this.shown.get(pair.key.name) !== pair.value);
    this.pending.clear();
    if (changed.length === 0) return;
    upsertSearchAttributes(changed);
    for (const pair of changed) this.shown.set(pair.key.name, pair.value as string | null);
  }

  private set(pair: SearchAttributeUpdatePair): void {
    if (!this.coalesce) upsertSearchAttributes([pair]);
    else this.pending.set(pair.key.name, pair);
  }
}

/** The delivery state rows stand for; null when the event has nothing to deliver. */
function storedDeliveryState(outbox: Pick<OutboxEntry, 'status'>[]): DeliveryState | null {
  if (outbox.length === 0) return null;
  const statuses = new Set(outbox.map((row) => row.status));
  if (statuses.has('compensated') || statuses.has('failed')) return 'compensated';
  if (statuses.has('not_configured')) return 'not_configured';
  if (statuses.has('pending')) return 'pending';
  return 'delivered';
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
