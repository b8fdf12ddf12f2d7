import type { PaymentEvent } from './payment-event';
import type { OutboxStatus, OutboxTarget, UndoneStatus } from './outbox';
import type { PaymentStatus } from './payment-rules';
import type { ReconcileOutcome, ReminderState } from './lifecycles';

/**
 * What settle writes to workflow history: each workflow's input and result, and each activity's
 * input and result. A recorded run replays against these shapes for as long as the namespace keeps
 * it, so they are declared here, field by field, and never derived from a SQL projection, a database
 * row or an activity's internals: an activity maps what it read into these before returning it.
 * test/unit/workflow-contracts.test.ts holds them to a checked-in snapshot and to the recorded
 * histories in test/histories/; a change that alters one fails it until both are updated on purpose.
 */

/** The start input of `paymentWorkflow`: the event as the gateway validated it (src/domain/payment-event.ts). */
export type PaymentWorkflowInput = { event: PaymentEvent };

/** One of the event's downstream effects, as the workflow needs it to deliver or undo it. */
export type OutboxEntry = {
  outboxId: number;
  target: OutboxTarget;
  action: string;
  idempotencyKey: string;
  status: OutboxStatus;
};

/** `reconcilePayment`'s input is the event itself; its result: */
export type ReconcileResult = {
  outcome: ReconcileOutcome;
  /** True when a claim already existed: this call changed nothing (or applied a parked event). */
  claimExisted: boolean;
  shipmentId: string;
  paymentStatus: PaymentStatus | null;
  /** The event's downstream effects, as stored; the workflow delivers those still deliverable. */
  outbox: OutboxEntry[];
};

/** The input of `deliverOutboxRow` and `reholdShipment`: an outbox row to deliver or undo. */
export type OutboxInput = { outboxId: number };

/** `deliverOutboxRow`'s result. */
export type OutboxDeliveryResult = {
  outboxId: number;
  target: OutboxTarget;
  action: string;
  /** `not_configured` when the target has no URL on this worker: nothing was sent. */
  status: OutboxStatus;
};

/**
 * Why one step of the first pass failed, as the workflow needs it to hand the step to its durable
 * activity: the activity failure's type (an ErrorCode), its message, whether a retry can change it,
 * and a downstream's Retry-After.
 */
export type StepFailure = {
  type: string | null;
  message: string;
  nonRetryable: boolean;
  retryAfterMs: number | null;
  /**
   * A bulk call the rate limit held in the first pass: the durable activity takes it at once and
   * waits there for its turn (activities/target-gate.ts). Absent in histories written before it.
   */
  handOver?: true;
};

/**
 * An activity's ApplicationFailure as a StepFailure: the one reading of its type, message,
 * retryability and Retry-After (the first detail's `retryAfterMs`, see activities/downstream.ts
 * failureFor), for the first pass (activity side) and the workflow's local attempts alike.
 */
export function stepFailureOf(failure: {
  type?: string | null;
  message: string;
  nonRetryable?: boolean | null;
  details?: unknown[] | null;
}): StepFailure {
  const details = failure.details?.[0] as { retryAfterMs?: unknown; handOver?: unknown } | undefined;
  return {
    type: failure.type ?? null,
    message: failure.message,
    nonRetryable: failure.nonRetryable === true,
    retryAfterMs: typeof details?.retryAfterMs === 'number' ? details.retryAfterMs : null,
    ...(details?.handOver === true ? { handOver: true as const } : {}),
  };
}

/** One outbox row's delivery attempt in the first pass: its result, or why it failed. */
export type DeliveryAttempt =
  { outboxId: number; delivered: OutboxDeliveryResult } | { outboxId: number; failure: StepFailure };

/**
 * `reconcileAndDeliver`'s input is the event itself; its result: the reconcile's, and one attempt per
 * row it tried, in DELIVERY_TARGETS' order, up to the first that failed (the rows after it, and any
 * the activity had no time left for, have none: the workflow delivers those step by step).
 */
export type ReconcileAndDeliverResult = {
  reconciled: ReconcileResult;
  attempts: DeliveryAttempt[];
};

/**
 * `reholdShipment`'s result (the activity type of the generic undo, undoDelivery): its target's
 * `undo.status` (`reheld`) once the target confirmed the undo.
 */
export type UndoDeliveryResult = {
  status: UndoneStatus | 'already_compensated' | 'never_sent' | 'refused' | 'not_configured';
};

/** `compensatePaymentEffects`' input. */
export type CompensationInput = { eventId: string; reason: string };

/** `compensatePaymentEffects`' result. */
export type PaymentCompensationResult = {
  reversals: number;
  abandoned: number;
  /** The event's rows as the compensation leaves them (absent from results recorded before it was added). */
  outbox?: OutboxEntry[];
};

/** The result of `paymentWorkflow`. */
export type PaymentWorkflowResult = {
  outcome: ReconcileOutcome;
  claimExisted: boolean;
  shipmentId: string;
  paymentStatus: PaymentStatus | null;
  /** Each row as the run left it, not as reconcile found it. */
  outbox: OutboxEntry[];
  /**
   * Each delivery this run made, in its final state: a release the compensation undid is `compensated`,
   * an unset target `not_configured`.
   */
  deliveries: OutboxDeliveryResult[];
  /** True when a downstream refused a step and the earlier steps were undone: outcome `needs_review`. */
  compensated: boolean;
};

/** The start input of `reminderWorkflow`. */
export type ReminderWorkflowInput = { deliveryId: string; dueAt: string };

/** The input of `deliverReminder`. */
export type ReminderDeliveryInput = { deliveryId: string };

/** `deliverReminder`'s result, and the result of `reminderWorkflow`. */
export type ReminderDeliveryResult = { state: ReminderState; attempts: number };
export type ReminderWorkflowResult = ReminderDeliveryResult;

/**
 * `confirmReminderCancelled`'s result (its input is ReminderDeliveryInput): whether the reminder's
 * row says cancelled, the one thing that lets a cancel signal end the run.
 */
export type ReminderCancelConfirmation = { cancelled: boolean };

/** The input of `failReminder`. */
export type FailReminderInput = { deliveryId: string; reason: string };

/** `failReminder`'s result. */
export type FailReminderResult = { attempts: number };

/**
 * The input of `recordInvalidRun`: a run whose own input failed validation (started around settle, on
 * Temporal's frontend) records itself before it fails. Bounded by the workflow, whatever the input was:
 * the run's input as canonical JSON, cut to INVALID_INPUT_SAMPLE_CHARS characters, and its full length.
 * The activity stores only the sample's hash; the run's ID and type it reads from its own context.
 */
export type InvalidRunInput = { sample: string; length: number };

/** `recordInvalidRun`'s result: true when this attempt recorded the run first. */
export type InvalidRunResult = { recorded: boolean };

/** `purgeClaimsPastRetention`'s result, and the result of `purgeClaimsWorkflow` (from db/purge.ts' report). */
export type PurgeResult = {
  /** Claims older than this were eligible. */
  cutoff: string;
  claims: number;
  events: number;
  conflicts: number;
  /**
   * Provider exceptions whose last delivery was before the cutoff, dropped. Absent from the results of
   * purges recorded in workflow histories before settle dropped them.
   */
  providerExceptions?: number;
  /** Open exceptions (unmatched, needs_review) past the cutoff, kept until someone resolves them. */
  keptExceptions: number;
  dryRun: boolean;
};

/** The input of `recoverySweepWorkflow` and `sweepProviderEvents`: the provider whose events are listed. */
/**
 * A provider with an events API settle sweeps: its name in the providers' table, whose module has a
 * recovery source (src/providers/registry.ts; a plain string here, as workflow code reads no table).
 */
export type RecoveryProvider = string;

export type RecoverySweepInput = { provider: RecoveryProvider };

/** `sweepProviderEvents`'s result, and the result of `recoverySweepWorkflow`. */
export type RecoverySweepResult = {
  provider: RecoveryProvider;
  /** Events of the types settle acts on that the provider listed after the cursor. */
  listed: number;
  /** Already admitted: duplicates, no Temporal action. */
  alreadyHad: number;
  /** Admitted now: the events the provider never delivered. */
  admitted: number;
  ignored: number;
  /** Recorded as exceptions (`settle exceptions`) and passed. */
  refused: number;
  /** The cursor's event time after the sweep; null while none was ever listed. */
  cursorCreatedAt: string | null;
};

/**
 * The recovery sweep's activity as its workflow sees it (src/activities/recovery-sweep-events.ts
 * implements it): declared here so that workflow code reaches no use-case module, even as a type.
 */
export type RecoveryActivities = {
  sweepProviderEvents(input: RecoverySweepInput): Promise<RecoverySweepResult>;
};
