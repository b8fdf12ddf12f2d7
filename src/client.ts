import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import type { Config } from './config';
import { paymentWorkflowId, reminderWorkflowId } from './domain/ids';
import type { PaymentEvent } from './domain/payment-event';
import type { paymentWorkflow, reminderWorkflow } from './workflows';

/** How long a start may take before the caller treats Temporal as unavailable. */
const START_DEADLINE_MS = 5_000;

export async function connectClient(
  config: Pick<Config, 'temporalAddress' | 'temporalNamespace'>,
): Promise<Client> {
  // Lazy: the gateway starts (and answers 503) while Temporal is still down.
  const connection = Connection.lazy({ address: config.temporalAddress });
  return new Client({ connection, namespace: config.temporalNamespace });
}

export type StartResult =
  { started: true; workflowId: string; runId: string } | { started: false; workflowId: string };

/**
 * Starts the event's workflow under its deterministic ID. REJECT_DUPLICATE and FAIL make Temporal
 * refuse a second start while it remembers the ID; that is the cheap first layer, the claim in
 * PostgreSQL is the one that decides. `reusePolicy: 'ALLOW_DUPLICATE'` is for an operator's replay.
 */
export async function startPaymentWorkflow(
  client: Client,
  taskQueue: string,
  event: PaymentEvent,
  options: { reusePolicy?: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE' } = {},
): Promise<StartResult> {
  const workflowId = paymentWorkflowId(event.id);
  try {
    const handle = await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      client.workflow.start<typeof paymentWorkflow>('paymentWorkflow', {
        taskQueue,
        workflowId,
        args: [{ event }],
        workflowIdReusePolicy: WorkflowIdReusePolicy[options.reusePolicy ?? 'REJECT_DUPLICATE'],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      }),
    );
    return { started: true, workflowId, runId: handle.firstExecutionRunId };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { started: false, workflowId };
    throw error;
  }
}

/** Starts a reminder's workflow under `reminder:<delivery id>`, refusing a duplicate like a payment's. */
export async function startReminderWorkflow(
  client: Client,
  taskQueue: string,
  reminder: { deliveryId: string; dueAt: Date },
): Promise<StartResult> {
  const workflowId = reminderWorkflowId(reminder.deliveryId);
  try {
    const handle = await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      client.workflow.start<typeof reminderWorkflow>('reminderWorkflow', {
        taskQueue,
        workflowId,
        args: [{ deliveryId: reminder.deliveryId, dueAt: reminder.dueAt.toISOString() }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      }),
    );
    return { started: true, workflowId, runId: handle.firstExecutionRunId };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { started: false, workflowId };
    throw error;
  }
}
