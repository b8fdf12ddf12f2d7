import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import {
  findClaimAndLockShipment,
  insertClaimAndOutbox,
  lockEventId,
  setPaymentStatusAndAppend,
  updateClaimOutcome,
  type LockedShipment,
} from '../db/claims';
import { recordUnadmittedRun, type UnadmittedRun } from '../db/events';
import { insertOutboxRowsAndList, outboxEntry, type NewOutboxRow, type StartedOutboxRow } from '../db/outbox';
import { recordRepeatClaim } from '../db/repeats';
import { withTransaction } from '../db/transaction';
import { paymentWorkflowId } from '../domain/ids';
import {
  deliveryTarget,
  downstreamIdempotencyKey,
  OUTBOX_TARGETS,
  type EffectContext,
  type OutboxTarget,
} from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import {
  capturesMoney,
  decideTransition,
  OPEN_ACCOUNT_POLICY,
  paymentMismatch,
  type AccountPolicy,
  type Mismatch,
} from '../domain/payment-rules';
import type { ReconcileResult } from '../domain/workflow-contracts';
import { ErrorCode, errorCodeOf } from '../domain/errors';
import { payloadSha256, shortHash } from '../lib/hash';
import { logger } from '../lib/logger';
import {
  duplicateClaimsTotal,
  eventToCommitSeconds,
  paymentMismatchesTotal,
  reconcileOutcomesTotal,
  transactionFailuresTotal,
  unadmittedRunsTotal,
} from '../metrics/settle-metrics';
import { annotateSpan } from '../tracing/tracing';
import { runIs, wrongRun } from './run-subject';

/**
 * One transaction: claim the event ID and apply its business effect together. A repeat returns the
 * stored outcome and changes nothing but the claim's repeat count; a repeat with another payload is a
 * non-retryable `idempotency_key_reused`. An `unmatched` claim is retried against the shipment, so a
 * replay applies it once the shipment exists. A run whose event settle's door never stored with this
 * payload (started around settle, on Temporal's frontend) changes nothing: it is recorded as an
 * `unadmitted_run` exception, counted, and refused non-retryably; a run of an admitted event whose
 * workflow ID is not `payment:<event id>` (a faithful copy of its input under another ID) writes
 * nothing and is refused, `wrong_workflow_id` (run-subject.ts). Connection and serialization
 * failures are thrown as-is and retried. Each attempt counts itself in the reconcile metrics and logs
 * what it decided.
 */
export async function reconcilePayment(
  pool: pg.Pool,
  event: PaymentEvent,
  accounts: AccountPolicy = OPEN_ACCOUNT_POLICY,
): Promise<ReconcileResult> {
  return (await reconcilePaymentThenStart(pool, event, accounts)).result;
}

/**
 * reconcilePayment as the first pass runs it: a new claim's first outbox row, when its target is one
 * of `startTargets` (those this worker can call), is stored with its attempt counted and returned as
 * `started`, ready to be sent (db/claims.ts insertClaimAndOutbox). `started` stays out of the result,
 * which workflow history carries.
 */
export async function reconcilePaymentThenStart(
  pool: pg.Pool,
  event: PaymentEvent,
  accounts: AccountPolicy = OPEN_ACCOUNT_POLICY,
  startTargets: readonly OutboxTarget[] = [],
): Promise<{ result: ReconcileResult; started?: StartedOutboxRow }> {
  try {
    // Validated once, by the workflow that passes it (workflows/payment.ts): no second parse here.
    const sha = payloadSha256(event);
    const decision = await withTransaction(
      pool,
      (tx) => claimAndApply(tx, event, sha, accounts, startTargets),
      { lockEventId: event.id },
    );
    if (decision.kind === 'refused') throw refusal(decision);
    if (decision.kind === 'wrong_run') throw wrongRun(paymentWorkflowId(event.id), 'reconcilePayment');
    const { result, secondsSinceReceipt, mismatch, started } = decision;
    reconcileOutcomesTotal.inc({ outcome: result.outcome });
    // Set only by the attempt that decided it (a repeat returns the stored outcome): counted once.
    if (mismatch) paymentMismatchesTotal.inc({ reason: mismatch.reason });
    if (result.claimExisted) duplicateClaimsTotal.inc();
    if (secondsSinceReceipt !== undefined) eventToCommitSeconds.observe(secondsSinceReceipt);
    logger.info(
      {
        component: 'activity',
        activity: 'reconcilePayment',
        event: shortHash(event.id),
        result: result.outcome,
        claimExisted: result.claimExisted,
        ...(mismatch ? { mismatch: mismatch.reason } : {}),
      },
      'payment event reconciled',
    );
    return { result, ...(started ? { started } : {}) };
  } catch (error) {
    transactionFailuresTotal.inc({ code: errorCodeOf(error) });
    throw error;
  }
}

type Decision =
  | {
      kind: 'reconciled';
      result: ReconcileResult;
      secondsSinceReceipt?: number;
      mismatch?: Mismatch;
      started?: StartedOutboxRow;
    }
  /** Committed: the run's record. `claimed`: the event ID has a claim (of another payload). */
  | { kind: 'refused'; run: UnadmittedRun; firstRecord: boolean; claimed: boolean }
  /** The event is admitted, but this run's workflow ID is not `payment:<event id>`: nothing written. */
  | { kind: 'wrong_run' };

/**
 * The failure of a refused run, after its record committed: counted once per run, logged by short
 * hashes, non-retryable (a retry meets the same stored state). A run under a claimed ID keeps the
 * claim's code, `idempotency_key_reused`, as before; any other is `unadmitted_run`.
 */
function refusal(decision: Extract<Decision, { kind: 'refused' }>): ApplicationFailure {
  const { run } = decision;
  if (decision.firstRecord) unadmittedRunsTotal.inc({ reason: run.reason });
  logger.warn(
    {
      component: 'activity',
      activity: 'reconcilePayment',
      event: shortHash(run.eventId),
      payload: run.payloadSha256.slice(0, 12),
      reason: run.reason,
      workflowId: shortHash(run.workflowId),
      runId: run.runId,
    },
    'payment run refused: settle never admitted this event with this payload',
  );
  const stored =
    run.reason === 'not_stored'
      ? 'settle never stored this event'
      : 'settle stored this event with another payload';
  return ApplicationFailure.create({
    message: decision.claimed
      ? `this event ID was already claimed with a different payload; the original effect stands (${stored})`
      : `this run was not started by settle: ${stored}; nothing was applied (settle exceptions: unadmitted_run)`,
    type: decision.claimed ? ErrorCode.IdempotencyKeyReused : ErrorCode.UnadmittedRun,
    nonRetryable: true,
    details: [{ reason: run.reason, payloadSha256: run.payloadSha256 }],
  });
}

/** The run this reconcile is an activity of (local or durable). */
function currentRun(eventId: string): { workflowId: string; runId: string } {
  let execution: { workflowId: string; runId: string } | undefined;
  try {
    execution = Context.current().info.workflowExecution;
  } catch {
    // Called outside an activity (a script, a test): no run to name.
  }
  return execution ?? { workflowId: paymentWorkflowId(eventId), runId: '(none)' };
}

/**
 * The admission check, the claim check and, for a new (or parked) event, the business effect, inside
 * one transaction that holds the event ID's lock from its first round trip (BEGIN and the lock), with
 * the shipment locked by the statement that reads the claim; then what the workflow needs, read on
 * the same connection before COMMIT (the same answer as after it): one pool connection per reconcile,
 * with up to 100 activities on a pool of 20.
 *
 * A claim of this very payload decides alone (the stored outcome, or an unmatched event's retry), so
 * an event whose `events` row was purged after its claim still answers. Otherwise the event must be
 * stored with this payload hash, as every door stores it (after the event ID's lock, which admission
 * holds until the row commits or rolls back): else the run is refused and only its record is written.
 * A claim found already there is counted on the claim (the duplicate-claim rate); a new one reports
 * its event-to-commit time.
 */
async function claimAndApply(
  tx: pg.PoolClient,
  event: PaymentEvent,
  sha: string,
  accounts: AccountPolicy,
  startTargets: readonly OutboxTarget[],
): Promise<Decision> {
  const shipmentId = event.data.shipment_id;
  annotateSpan({ shipmentId });
  await lockEventId(tx, event.id); // taken as the transaction began: no round trip
  const {
    claim,
    storedPayloadSha256: storedSha,
    shipment,
  } = await findClaimAndLockShipment(tx, event.id, shipmentId);
  if (claim?.payloadSha256 !== sha && storedSha !== sha) {
    const run: UnadmittedRun = {
      ...currentRun(event.id),
      eventId: event.id,
      payloadSha256: sha,
      shipmentId,
      eventType: event.type,
      reason: storedSha === undefined ? 'not_stored' : 'payload_differs',
    };
    const firstRecord = await recordUnadmittedRun(tx, run);
    return { kind: 'refused', run, firstRecord, claimed: claim !== undefined };
  }
  // A faithful copy of an admitted event's input started under another workflow ID.
  if (!runIs(paymentWorkflowId(event.id))) return { kind: 'wrong_run' };
  if (claim && claim.payloadSha256 !== sha) {
    // Stored with this payload, yet claimed with another: a claim older than the admission check.
    throw ApplicationFailure.nonRetryable(
      'this event ID was already claimed with a different payload; the original effect stands',
      ErrorCode.IdempotencyKeyReused,
    );
  }
  const outboxOf = async (rows: NewOutboxRow[] = []) =>
    (await insertOutboxRowsAndList(tx, { eventId: event.id, shipmentId }, rows)).map(outboxEntry);
  if (claim) await recordRepeatClaim(tx, event.id);
  if (claim && claim.outcome !== 'unmatched') {
    const result: ReconcileResult = {
      outcome: claim.outcome,
      claimExisted: true,
      shipmentId,
      paymentStatus: shipment?.paymentStatus ?? null,
      outbox: await outboxOf(),
    };
    return { kind: 'reconciled', result };
  }
  const { mismatch, effects, ...applied } = await applyPaymentTransition(tx, event, shipment, accounts);
  if (claim) {
    const result: ReconcileResult = {
      ...applied,
      claimExisted: true,
      shipmentId,
      outbox: await outboxOf(effects),
    };
    if (applied.outcome !== 'unmatched') {
      await updateClaimOutcome(tx, event.id, applied.outcome, mismatch?.detail);
    }
    return { kind: 'reconciled', result, mismatch };
  }
  // A new claim: it and the event's outbox rows in one statement, the first row's attempt counted.
  const first = effects[0];
  const startKey = first && startTargets.includes(first.target) ? first.idempotencyKey : undefined;
  const { secondsSinceReceipt, outbox, started } = await insertClaimAndOutbox(
    tx,
    {
      eventId: event.id,
      payloadSha256: sha,
      outcome: applied.outcome,
      shipmentId,
      reviewReason: mismatch?.detail,
    },
    effects,
    startKey,
  );
  const result: ReconcileResult = {
    ...applied,
    claimExisted: false,
    shipmentId,
    outbox: outbox.map(outboxEntry),
  };
  return { kind: 'reconciled', result, secondsSinceReceipt, mismatch, ...(started ? { started } : {}) };
}

/**
 * The business rule, inside the claim's transaction, on the shipment locked for it: status forward
 * only, then the payment must pay for its shipment (paymentMismatch: account, currency, amount; else
 * `needs_review` with its reason and nothing written but the claim), then status and ledger entry (one
 * statement). Returns the outcome, the shipment's status as this transaction leaves it and the outbox
 * rows the event adds, which the caller writes (with the claim, for a new one).
 */
async function applyPaymentTransition(
  tx: pg.PoolClient,
  event: PaymentEvent,
  shipment: LockedShipment | undefined,
  accounts: AccountPolicy,
): Promise<
  Pick<ReconcileResult, 'outcome' | 'paymentStatus'> & { effects: NewOutboxRow[]; mismatch?: Mismatch }
> {
  const { shipment_id: shipmentId, payment_id: paymentId, amount, currency } = event.data;
  if (!shipment) return { outcome: 'unmatched', paymentStatus: null, effects: [] };

  const transition = decideTransition(shipment.paymentStatus, event.type);
  if (transition.kind === 'stale') {
    return { outcome: 'stale', paymentStatus: shipment.paymentStatus, effects: [] };
  }
  const mismatch = paymentMismatch({ ...event.data, type: event.type }, shipment.expected, accounts);
  if (mismatch) {
    return { outcome: 'needs_review', paymentStatus: shipment.paymentStatus, effects: [], mismatch };
  }

  const base = { shipmentId, paymentId, eventId: event.id, amount, currency };
  const entry = await setPaymentStatusAndAppend(
    tx,
    { shipmentId, paymentStatus: transition.to, paymentId, eventId: event.id },
    capturesMoney(transition.to)
      ? { ...base, kind: 'capture' }
      : transition.to === 'refunded'
        ? { ...base, kind: 'refund', refundKey: refundKeyOf(event) }
        : undefined,
  );

  // One row per target the event asks something of, in the table's (delivery) order.
  const context = { event, entry: entry as EffectContext['entry'], holdStatus: shipment.holdStatus };
  const effects = OUTBOX_TARGETS.flatMap((target): NewOutboxRow[] => {
    const { action, effect } = deliveryTarget(target);
    const body = effect(context);
    if (!body) return [];
    return [{ target, action, idempotencyKey: downstreamIdempotencyKey(event.id, target, action), body }];
  });
  return { outcome: 'applied', paymentStatus: transition.to, effects };
}

/**
 * The provider's refund object an event reports (`data.refund_id`, set by the provider adapters), so
 * two events about one refund append one refund entry; absent, each refund event is its own refund.
 */
function refundKeyOf(event: PaymentEvent): string | undefined {
  const refundId = event.data.refund_id;
  return typeof refundId === 'string' && refundId.length > 0 ? refundId : undefined;
}
