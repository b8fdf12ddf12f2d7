import { ApplicationFailure } from '@temporalio/activity';
import type pg from 'pg';
import {
  appendLedgerEntry,
  listReversibleEntriesForEvent,
  lockEventId,
  setHoldStatus,
  updateClaimOutcome,
} from '../db/claims';
import {
  abandonPendingOutbox,
  findOutboxRow,
  listOutboxForEvent,
  markOutboxCompensated,
  noteOutbox,
  outboxEntry,
} from '../db/outbox';
import { withTransaction } from '../db/transaction';
import {
  callAudience,
  deliveryTarget,
  downstreamIdempotencyKey,
  targetEndpoint,
  type UndoneStatus,
} from '../domain/outbox';
import { ErrorCode } from '../domain/errors';
import type {
  CompensationInput,
  OutboxInput,
  PaymentCompensationResult,
  UndoDeliveryResult,
} from '../domain/workflow-contracts';
import {
  callDownstream,
  countDelivery,
  failureFor,
  targetCallPolicy,
  type DeliveryDependencies,
} from './downstream';
import { enterTarget, leaveTarget } from './target-gate';
import { annotateSpan } from '../tracing/tracing';
import { paymentWorkflowId } from '../domain/ids';
import { actOnlyFor } from './run-subject';

/**
 * Undoes a delivered row by calling its target again with the target's `undo` (DELIVERY_TARGETS: its
 * action and body, the notes' name, the status it answers; the carrier holds the shipment again),
 * under its own idempotency key (`<event id>:<target>:<keyAction>`, signed, read and addressed as
 * every call to that target is), and marks the row `compensated` (and the shipment `held` when the
 * undo holds it). Its activity type keeps the name recorded in the runs' histories, `reholdShipment`.
 * Idempotent: a row already compensated sends nothing; a repeat of the call carries the same key.
 * Registered before the delivery runs, so it also covers one whose outcome was ambiguous: any delivery
 * that was attempted at all is undone; one never sent is left alone. A refusal (as the target's answer
 * policy reads it: a 4xx for an internal API) is noted on the row and does not stop the rest of the
 * compensation; 5xx and timeouts are retried.
 */
export async function undoDelivery(
  deps: DeliveryDependencies,
  input: OutboxInput,
): Promise<UndoDeliveryResult> {
  const row = await findOutboxRow(deps.pool, input.outboxId);
  const target = row && deliveryTarget(row.target);
  const undo = target?.undo;
  if (!row || !target || !undo) {
    throw ApplicationFailure.nonRetryable(
      'not an outbox row its target can undo',
      ErrorCode.InvalidWorkflowInput,
    );
  }
  actOnlyFor(paymentWorkflowId(row.eventId), 'reholdShipment');
  annotateSpan({ shipmentId: row.shipmentId });
  if (row.status === 'compensated') return { status: 'already_compensated' };
  if (row.attempts === 0) return { status: 'never_sent' };
  const endpoint = targetEndpoint(deps.config, row.target);
  if ('missing' in endpoint) {
    await noteOutbox(deps.pool, row.outboxId, `${undo.name} not sent: ${endpoint.missing} is not configured`);
    countDelivery(row.target, undo.action, 'not_configured');
    return { status: 'not_configured' };
  }
  const call = targetCallPolicy(deps.config, target);
  // The undo is a call to the target like any other: its limits and its pause or failing state hold it.
  const gate = { pool: deps.pool, config: deps.config, requestTimeoutMs: deps.tuning.requestTimeoutMs };
  const pass = await enterTarget(gate, row.target, true, null);
  const called = await callDownstream(
    deps.http,
    {
      url: endpoint.url,
      idempotencyKey: downstreamIdempotencyKey(row.eventId, row.target, undo.keyAction),
      signingSecret: endpoint.signingSecret,
      audience: callAudience({ target: row.target }),
      body: { action: undo.action, ...undo.body(row) },
      timeoutMs: deps.tuning.requestTimeoutMs,
      allowPrivateTargets: call.allowPrivateTargets,
    },
    call.policy,
  );
  countDelivery(row.target, undo.action, called);
  const outcome = await leaveTarget(gate, row.target, pass, called);
  if (outcome.kind === 'delivered') {
    await withTransaction(deps.pool, async (tx) => {
      await markOutboxCompensated(tx, row.outboxId, undo.note);
      if (undo.holdsShipment) await setHoldStatus(tx, row.shipmentId, 'held');
    });
    // The table's literal, typed as its row (DeliveryTarget) is: UndoneStatus is that same value.
    return { status: undo.status as UndoneStatus };
  }
  if (outcome.kind === 'permanent') {
    await noteOutbox(deps.pool, row.outboxId, `${undo.name} refused: ${outcome.detail}`);
    return { status: 'refused' };
  }
  await noteOutbox(deps.pool, row.outboxId, `${undo.name} not yet done: ${outcome.detail}`);
  throw failureFor(outcome);
}

/**
 * The last compensation of a refused settle flow, in one transaction: the event's effects not yet sent
 * become `failed` (with the reason), each capture or refund entry it appended gets one `reversal`
 * entry (the ledger is append-only and allows one reversal per entry, so a repeat appends nothing), and
 * the claim's outcome becomes `needs_review` for an operator. It runs last, so the rows it returns are
 * the event's final states, what the workflow's result shows.
 */
export async function compensatePaymentEffects(
  pool: pg.Pool,
  input: CompensationInput,
): Promise<PaymentCompensationResult> {
  actOnlyFor(paymentWorkflowId(input.eventId), 'compensatePaymentEffects');
  return withTransaction(pool, async (tx) => {
    await lockEventId(tx, input.eventId);
    const abandoned = await abandonPendingOutbox(tx, input.eventId, `not sent: ${input.reason}`);
    let reversals = 0;
    for (const entry of await listReversibleEntriesForEvent(tx, input.eventId)) {
      const reversal = await appendLedgerEntry(tx, {
        kind: 'reversal',
        shipmentId: entry.shipmentId,
        paymentId: entry.paymentId,
        eventId: input.eventId,
        amount: entry.amount,
        currency: entry.currency,
        reversesEntryId: entry.entryId,
      });
      if (reversal) reversals += 1;
    }
    await updateClaimOutcome(tx, input.eventId, 'needs_review');
    const outbox = (await listOutboxForEvent(tx, input.eventId)).map(outboxEntry);
    return { reversals, abandoned, outbox };
  });
}
