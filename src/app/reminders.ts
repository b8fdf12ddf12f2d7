import type pg from 'pg';
import {
  cancelScheduledReminder,
  findReminder,
  insertReminder,
  listReminderAttempts,
  type Reminder,
  type ReminderState,
} from '../db/reminders';
import { reminderWorkflowId } from '../domain/ids';
import type { ReminderView } from '../domain/api-contract';
import type { ReminderRequest } from '../domain/reminder';
import type { FieldIssue } from '../domain/untrusted-json';
import { payloadSha256 } from '../lib/hash';
import { assertPublicTarget } from '../lib/target-policy';
import { startReminderWorkflow } from '../client';
import { recordDisplacedRuns, runMarkKey } from './run-marks';
import { cancelReminderSignal } from '../workflows/reminder';
import { admitThenStart, refusedByDatabase, type Dependency } from './admit-payment-event';
import type { Services } from './services';

export type ReminderAdmission =
  /** The workflow was started now (`started`), or Temporal already knew its ID. */
  | { status: 'started'; started: boolean; workflowId: string; dueAt: Date }
  /** The delivery ID was already admitted with this body. */
  | { status: 'known'; reminder: Reminder }
  /** The delivery ID was already admitted with another body; the original reminder stands. */
  | { status: 'conflict' }
  | { status: 'invalid'; issues: FieldIssue[] }
  | { status: 'unavailable'; dependency: Dependency };

/**
 * Admits a renewal reminder under its delivery ID (the `Idempotency-Key`). The same ID and body again
 * is the known reminder, the same ID with another body a conflict. Like a payment event, the reminder
 * row commits only once Temporal durably accepted its workflow (`admitThenStart`). A target on a
 * private or loopback address is refused unless `allowPrivateTargets`.
 */
export async function admitReminder(
  deps: Services & { allowPrivateTargets?: boolean },
  deliveryId: string,
  body: unknown,
  reminder: ReminderRequest,
): Promise<ReminderAdmission> {
  const sha = payloadSha256(body);
  const workflowId = reminderWorkflowId(deliveryId);
  const known = (stored: Reminder): ReminderAdmission =>
    stored.requestSha256 === sha ? { status: 'known', reminder: stored } : { status: 'conflict' };

  let stored: Reminder | undefined;
  try {
    stored = await findReminder(deps.pool, deliveryId);
  } catch (error) {
    return refusedByDatabase(error);
  }
  if (stored) return known(stored);

  if (!deps.allowPrivateTargets) {
    try {
      await assertPublicTarget(new URL(reminder.webhook_url));
    } catch (error) {
      return { status: 'invalid', issues: [{ path: 'webhook_url', message: (error as Error).message }] };
    }
  }

  const dueAt = new Date(reminder.due_at);
  let markKey: Buffer;
  try {
    markKey = await runMarkKey(deps.pool);
  } catch (error) {
    return refusedByDatabase(error);
  }
  const admission = await admitThenStart(deps.pool, {
    insert: (tx) =>
      insertReminder(tx, {
        deliveryId,
        contractId: reminder.contract_id,
        dueAt,
        webhookUrl: reminder.webhook_url,
        payload: reminder.payload ?? null,
        requestSha256: sha,
        workflowId,
      }),
    whenKnown: (tx) => findReminder(tx, deliveryId),
    start: (tx) =>
      startReminderWorkflow(
        deps.client,
        deps.taskQueue,
        { deliveryId, dueAt, contractId: reminder.contract_id },
        { markKey, runs: tx },
      ),
  });
  switch (admission.kind) {
    case 'known':
      return admission.known ? known(admission.known) : { status: 'unavailable', dependency: 'postgres' };
    case 'started':
      if (admission.started.started && admission.started.displaced.length > 0) {
        await recordDisplacedRuns(deps.pool, admission.started.displaced, {
          id: deliveryId,
          type: 'reminder',
          shipmentId: null,
          payloadSha256: sha,
        }).catch(() => {
          // Bookkeeping: the run was displaced and settle's own started; the start's log names it.
        });
      }
      return { status: 'started', started: admission.started.started, workflowId, dueAt };
    case 'failed':
      return admission.dependency === 'temporal'
        ? { status: 'unavailable', dependency: 'temporal' }
        : refusedByDatabase(admission.error);
  }
}

export type ReminderCancellation =
  | { status: 'cancelled'; workflowId: string }
  | { status: 'not_found' }
  | { status: 'not_cancellable'; state: ReminderState };

/**
 * Cancels a scheduled reminder; cancelling one already cancelled answers the same. The row says
 * cancelled first, and the workflow checks it before delivering: the signal only ends the workflow
 * early, so a lost signal (Temporal briefly down) changes nothing.
 */
export async function cancelReminder(
  deps: Pick<Services, 'pool' | 'client'>,
  deliveryId: string,
): Promise<ReminderCancellation> {
  const cancelled = await cancelScheduledReminder(deps.pool, deliveryId);
  if (cancelled) {
    await deps.client.workflow
      .getHandle(cancelled.workflowId)
      .signal(cancelReminderSignal)
      .catch(() => undefined);
    return { status: 'cancelled', workflowId: cancelled.workflowId };
  }
  const reminder = await findReminder(deps.pool, deliveryId);
  if (!reminder) return { status: 'not_found' };
  if (reminder.state === 'cancelled') return { status: 'cancelled', workflowId: reminder.workflowId };
  return { status: 'not_cancellable', state: reminder.state };
}

/** The JSON of GET /reminders/<id>: the delivery record and every attempt; undefined when unknown. */
export async function viewReminder(pool: pg.Pool, deliveryId: string): Promise<ReminderView | undefined> {
  const reminder = await findReminder(pool, deliveryId);
  if (!reminder) return undefined;
  const attempts = await listReminderAttempts(pool, reminder.deliveryId);
  return {
    delivery_id: reminder.deliveryId,
    contract_id: reminder.contractId,
    workflow_id: reminder.workflowId,
    status: reminder.state,
    due_at: reminder.dueAt.toISOString(),
    webhook_url: reminder.webhookUrl,
    lease_expires_at: reminder.leaseExpiresAt?.toISOString() ?? null,
    last_error: reminder.lastError,
    created_at: reminder.createdAt.toISOString(),
    completed_at: reminder.completedAt?.toISOString() ?? null,
    attempt_count: reminder.attempts,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.startedAt.toISOString(),
      lease_expires_at: attempt.leaseExpiresAt.toISOString(),
      finished_at: attempt.finishedAt?.toISOString() ?? null,
      status_code: attempt.statusCode,
      error: attempt.error,
    })),
  };
}
