import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import {
  beginReminderAttempt,
  failOpenReminder,
  findReminder,
  finishReminderAttempt,
  lockReminder,
  type Reminder,
  type ReminderState,
} from '../db/reminders';
import { withTransaction } from '../db/transaction';
import type {
  FailReminderInput,
  FailReminderResult,
  ReminderCancelConfirmation,
  ReminderDeliveryInput,
  ReminderDeliveryResult,
} from '../domain/workflow-contracts';
import { ErrorCode } from '../domain/errors';
import { callAudience, REMINDER_SECRET_VARIABLE } from '../domain/outbox';
import { reminderWorkflowId } from '../domain/ids';
import {
  callDownstream,
  countDelivery,
  CUSTOMER_ENDPOINT_POLICY,
  failureFor,
  type DeliveryDependencies,
} from './downstream';
import { actOnlyFor, currentWorkflowId } from './run-subject';

/** A little past the lease, so the retry finds it expired on the database clock. */
const LEASE_MARGIN_MS = 250;

/**
 * How much earlier than the row's due_at a delivery may be asked for (Temporal's timer and the
 * workflow's clock read the same server time; this covers rounding only).
 */
const DUE_TOLERANCE_MS = 1_000;

/**
 * When the run first asked for this delivery, on Temporal's clock (the clock the run's timer waited
 * on, time-skipping test servers included); undefined outside an activity (a script, a test).
 */
function askedAtMs(): number | undefined {
  try {
    return Context.current().info.scheduledTimestampMs;
  } catch {
    return undefined;
  }
}

/** What an attempt found on the reminder row: finished, leased to another attempt, or leased to this one. */
type Lease =
  | { kind: 'finished'; state: ReminderState; attempts: number }
  | { kind: 'early'; dueAt: Date; askedAt: number }
  | { kind: 'held'; remainingMs: number }
  | { kind: 'taken'; reminder: Reminder; attempt: number };

/**
 * Delivers a due reminder once, for its own run only (`reminder:<delivery id>`; any other is refused,
 * non-retryable `wrong_workflow_id`). The reminder row decides, never the run's input: a cancelled or
 * finished one is not sent; one whose own due_at is later than when the run asked (a run started
 * around settle with an earlier `dueAt`) is refused, non-retryable `reminder_not_due`, and nothing is
 * written;
 * a `processing` one whose lease has not expired belongs to another attempt (its worker may only have
 * vanished), so this attempt throws retryable `lease_held` with the lease's remainder as the retry
 * delay. Otherwise it takes the lease and POSTs with `webhook-id` and `Idempotency-Key` equal to the
 * delivery ID on every attempt and a Standard Webhooks signature made fresh for each (the first of
 * SETTLE_REMINDER_SECRET's secrets signs, never the carrier's and ERP's SETTLE_OUTBOUND_SECRET; the
 * body's `audience` is the webhook URL: downstream.ts). 2xx: `succeeded`.
 * 410 Gone or a refused (private) target: `failed`, no retry. Anything else: recorded, lease released,
 * retried with backoff (429/503 after their Retry-After).
 */
export async function deliverReminder(
  deps: DeliveryDependencies,
  input: ReminderDeliveryInput,
): Promise<ReminderDeliveryResult> {
  actOnlyFor(reminderWorkflowId(input.deliveryId), 'deliverReminder');
  const lease = await withTransaction(deps.pool, async (tx): Promise<Lease | undefined> => {
    const reminder = await lockReminder(tx, input.deliveryId);
    if (!reminder) return undefined;
    if (reminder.state !== 'scheduled' && reminder.state !== 'processing') {
      return { kind: 'finished', state: reminder.state, attempts: reminder.attempts };
    }
    const askedAt = askedAtMs();
    if (askedAt !== undefined && askedAt + DUE_TOLERANCE_MS < reminder.dueAt.getTime()) {
      return { kind: 'early', dueAt: reminder.dueAt, askedAt };
    }
    if (reminder.state === 'processing' && reminder.leaseRemainingMs > 0) {
      return { kind: 'held', remainingMs: reminder.leaseRemainingMs };
    }
    const attempt = await beginReminderAttempt(tx, input.deliveryId, deps.tuning.reminderLeaseMs);
    return { kind: 'taken', reminder, attempt };
  });
  if (!lease) throw ApplicationFailure.nonRetryable('no such reminder', ErrorCode.InvalidWorkflowInput);
  if (lease.kind === 'finished') return { state: lease.state, attempts: lease.attempts };
  if (lease.kind === 'early') {
    throw ApplicationFailure.nonRetryable(
      `the reminder is due at ${lease.dueAt.toISOString()}, and this run asked for it at ` +
        `${new Date(lease.askedAt).toISOString()}: not sent (a run settle did not start?)`,
      ErrorCode.ReminderNotDue,
    );
  }
  if (lease.kind === 'held') {
    throw ApplicationFailure.create({
      message: 'another attempt holds the delivery lease',
      type: ErrorCode.LeaseHeld,
      nextRetryDelay: Math.ceil(lease.remainingMs) + LEASE_MARGIN_MS,
    });
  }

  const { reminder, attempt } = lease;
  const secret = deps.config.reminderSecret?.[0];
  if (!secret) {
    const error = `not sent: ${REMINDER_SECRET_VARIABLE} is not configured`;
    countDelivery('customer', 'renewal_reminder', 'not_configured');
    await finishReminderAttempt(deps.pool, reminder.deliveryId, attempt, {
      state: 'processing',
      statusCode: null,
      error,
    });
    throw ApplicationFailure.retryable(error, ErrorCode.NotConfigured);
  }

  const body = {
    type: 'contract.renewal_due',
    delivery_id: reminder.deliveryId,
    contract_id: reminder.contractId,
    due_at: reminder.dueAt.toISOString(),
    payload: reminder.payload,
  };
  const outcome = await callDownstream(
    deps.http,
    {
      url: reminder.webhookUrl,
      idempotencyKey: reminder.deliveryId,
      signingSecret: secret,
      audience: callAudience({ webhookUrl: reminder.webhookUrl }),
      body,
      timeoutMs: deps.tuning.requestTimeoutMs,
      allowPrivateTargets: deps.config.allowPrivateTargets ?? false,
    },
    CUSTOMER_ENDPOINT_POLICY,
  );
  countDelivery('customer', 'renewal_reminder', outcome);
  const state =
    outcome.kind === 'delivered' ? 'succeeded' : outcome.kind === 'permanent' ? 'failed' : 'processing';
  await finishReminderAttempt(deps.pool, reminder.deliveryId, attempt, {
    state,
    statusCode: outcome.statusCode,
    error: outcome.kind === 'delivered' ? null : outcome.detail,
  });
  if (outcome.kind === 'retry') throw failureFor(outcome);
  return { state, attempts: attempt };
}

/**
 * The reminder's retries ran out: it is `failed` for good, with why. Only the reminder's own run
 * (`reminder:<delivery id>`), once the reminder is due, can fail it: a run started around settle under
 * another ID, or asking before due_at (its delivery was refused as not due), leaves the row as it is.
 */
export async function failReminder(pool: pg.Pool, input: FailReminderInput): Promise<FailReminderResult> {
  const run = currentWorkflowId();
  if (run !== undefined) {
    const reminder = await findReminder(pool, input.deliveryId);
    const askedAt = askedAtMs();
    const early =
      askedAt !== undefined &&
      reminder !== undefined &&
      askedAt + DUE_TOLERANCE_MS < reminder.dueAt.getTime();
    if (!reminder || run !== reminderWorkflowId(input.deliveryId) || early) {
      return { attempts: reminder?.attempts ?? 0 };
    }
  }
  return { attempts: await failOpenReminder(pool, input.deliveryId, input.reason) };
}

/**
 * What a `cancelReminder` signal asks the run to check: the signal itself proves nothing (anyone who
 * can reach Temporal's frontend can send it), the reminder's row does. Only the reminder's own run asks.
 */
export async function confirmReminderCancelled(
  pool: pg.Pool,
  input: ReminderDeliveryInput,
): Promise<ReminderCancelConfirmation> {
  actOnlyFor(reminderWorkflowId(input.deliveryId), 'confirmReminderCancelled');
  const reminder = await findReminder(pool, input.deliveryId);
  return { cancelled: reminder?.state === 'cancelled' };
}
