import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  defineSignal,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { isDeliveryId } from '../domain/ids';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/errors';
import { refuseInvalidInput } from './invalid-input';
import type { ReminderWorkflowInput, ReminderWorkflowResult } from '../domain/workflow-contracts';

export type { ReminderWorkflowInput, ReminderWorkflowResult } from '../domain/workflow-contracts';

/**
 * Sent by DELETE /reminders/<id> after it marked the reminder cancelled: wakes the workflow, which ends
 * only once the reminder's row confirms the cancellation (a forged signal changes nothing).
 */
export const cancelReminderSignal = defineSignal('cancelReminder');

/** Runs that recorded this marker check the row before a cancel signal ends them; older ones did not. */
export const CONFIRM_CANCEL_PATCH = 'reminder-cancel-confirmed-by-row';

/**
 * Delivery to a customer's endpoint: everything but 410 Gone and a refused target is retried, 5 s
 * doubling to an hour apart, 30 attempts (about a day); a Retry-After sets the next delay exactly, and
 * a `lease_held` retry waits out the lease of an attempt whose worker vanished. The heartbeat notices
 * a vanished worker within 10 s.
 */
const { deliverReminder } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 hour',
    maximumAttempts: 30,
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
});

/**
 * One read of the reminder's row, in the worker that runs the workflow: its marker goes out with the
 * patch's in one command. Retried without limit (PostgreSQL briefly down).
 */
const { confirmReminderCancelled } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Bookkeeping in PostgreSQL: retried without limit. */
const { failReminder } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * One renewal reminder (ID `reminder:<delivery id>`): a durable timer until `due_at` (any length: no
 * cron, no polling), then one delivery. The reminder row decides what happens: a reminder cancelled
 * in PostgreSQL is never sent even if the signal is lost, a signal whose row is not cancelled (sent by
 * someone else) only makes the run look, and the activity's lease keeps two attempts from delivering
 * at once.
 */
export async function reminderWorkflow(input: ReminderWorkflowInput): Promise<ReminderWorkflowResult> {
  const dueAt = Date.parse(input?.dueAt);
  if (!isDeliveryId(input?.deliveryId) || Number.isNaN(dueAt)) {
    return refuseInvalidInput(input, 'reminder input failed validation');
  }
  let signalled = false;
  setHandler(cancelReminderSignal, () => {
    signalled = true;
  });
  for (;;) {
    const waitMs = dueAt - Date.now();
    if (waitMs > 0) await condition(() => signalled, waitMs);
    if (!signalled) break;
    // Runs recorded before the check ended on the signal alone: they replay as they ran.
    if (!patched(CONFIRM_CANCEL_PATCH)) return { state: 'cancelled', attempts: 0 };
    const { cancelled } = await confirmReminderCancelled({ deliveryId: input.deliveryId });
    if (cancelled) return { state: 'cancelled', attempts: 0 };
    log.warn('a cancel signal the reminder row does not confirm: ignored, the reminder stays due');
    signalled = false;
  }

  try {
    const result = await deliverReminder({ deliveryId: input.deliveryId });
    log.info('reminder delivery finished', { state: result.state, attempts: result.attempts });
    return result;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const reason = `gave up: ${error.cause?.message ?? 'delivery failed'}`;
    const { attempts } = await failReminder({ deliveryId: input.deliveryId, reason });
    log.warn('reminder delivery gave up', {
      errorType: (error.cause as ApplicationFailure | undefined)?.type,
    });
    return { state: 'failed', attempts };
  }
}
