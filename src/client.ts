import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from './config';
import { activeTracing } from './lib/tracing';
import { paymentWorkflowId, reminderWorkflowId } from './domain/ids';
import type { PaymentEvent } from './domain/payment-event';
import { temporalConnectionOptions, type TemporalConnectionConfig } from './temporal/connection';
import { settleDataConverter, type PayloadKeysConfig } from './temporal/data-converter';
import { bulkTaskQueue } from './temporal/task-queues';
import { paymentStartSearchAttributes, paymentSummary, reminderSummary } from './domain/search-attributes';
import type { paymentWorkflow, reminderWorkflow } from './workflows';

/** How long a start may take before the caller treats Temporal as unavailable. */
const START_DEADLINE_MS = 5_000;

/** Where a client goes, and whether its payloads are encrypted (SETTLE_PAYLOAD_KEYS). */
export type ClientConfig = Pick<Config, 'temporalNamespace'> & PayloadKeysConfig;

/**
 * Every Temporal client settle makes (gateway, CLI commands, the purge Schedule's, tools and tests):
 * with payload keys configured, what it writes is encrypted and what it reads decrypted.
 */
export async function connectClient(config: TemporalConnectionConfig & ClientConfig): Promise<Client> {
  // Lazy: the gateway starts (and answers 503) while Temporal is still down.
  const connection = Connection.lazy(temporalConnectionOptions(config));
  return new Client({
    connection,
    namespace: config.temporalNamespace,
    dataConverter: settleDataConverter(config),
    interceptors: tracedStarts(),
  });
}

/** With tracing on, each start is a StartWorkflow span whose context the run continues (lib/tracing.ts). */
function tracedStarts() {
  return { workflow: activeTracing()?.workflowClientInterceptors ?? [] };
}

/** Clients on the connection a worker of this same process polls with (`clientOnWorkerConnection`). */
const onWorkerConnection = new WeakSet<Client>();

/**
 * A client on the connection a worker of this process polls with (`settle start`, `settle serve`). Its
 * payment starts ask for eager dispatch: Temporal answers the start with the run's first workflow task
 * for this process's worker, skipping the trip through matching; with no free slot on that worker it
 * queues the task as usual. Closing the worker's connection closes this client.
 */
export function clientOnWorkerConnection(connection: NativeConnection, config: ClientConfig): Client {
  const client = new Client({
    connection,
    namespace: config.temporalNamespace,
    dataConverter: settleDataConverter(config),
    interceptors: tracedStarts(),
  });
  onWorkerConnection.add(client);
  return client;
}

export type StartResult =
  | { started: true; workflowId: string; runId: string; eagerlyStarted: boolean }
  | { started: false; workflowId: string };

type ReusePolicy = 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE';

/**
 * Bulk work (`settle import`) runs on its own task queue (task-queues.ts), and at Temporal's lowest
 * task priority (1 first … 5 last; unset is 3), so that matching too serves live tasks first where
 * the two meet. Live traffic (webhooks, replays) keeps the configured queue and the default priority.
 */
export const BULK_PRIORITY_KEY = 5;
export type StartPriority = 'live' | 'bulk';

/**
 * Starts a workflow under its deterministic ID. REJECT_DUPLICATE and FAIL make Temporal refuse a
 * second start while it remembers the ID: the cheap first layer; the claim in PostgreSQL is the one
 * that decides. A refused start is `started: false`, not an error; anything else (Temporal
 * unreachable past the deadline) is thrown, and the caller answers 503.
 */
async function startOnce(
  client: Client,
  workflowType: string,
  options: {
    taskQueue: string;
    workflowId: string;
    args: unknown[];
    reusePolicy?: ReusePolicy;
    /** The run's one line in the Temporal UI, naming its business. */
    summary: string;
    searchAttributes?: SearchAttributePair[];
    /** Ask for eager dispatch when this process's own worker shares the client's connection. */
    eager?: boolean;
    priority?: StartPriority;
  },
): Promise<StartResult> {
  const { workflowId, args } = options;
  const bulk = options.priority === 'bulk';
  const taskQueue = bulk ? bulkTaskQueue(options.taskQueue) : options.taskQueue;
  try {
    const handle = await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      client.workflow.start(workflowType, {
        taskQueue,
        workflowId,
        args,
        workflowIdReusePolicy: WorkflowIdReusePolicy[options.reusePolicy ?? 'REJECT_DUPLICATE'],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        staticSummary: options.summary,
        ...(options.searchAttributes ? { typedSearchAttributes: options.searchAttributes } : {}),
        // Eager dispatch would hand a bulk run to this process's live slots: bulk runs queue.
        requestEagerStart: options.eager === true && !bulk && onWorkerConnection.has(client),
        ...(bulk ? { priority: { priorityKey: BULK_PRIORITY_KEY } } : {}),
      }),
    );
    return {
      started: true,
      workflowId,
      runId: handle.firstExecutionRunId,
      eagerlyStarted: handle.eagerlyStarted,
    };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { started: false, workflowId };
    throw error;
  }
}

/**
 * The event's workflow, `payment:<event id>`, with its search attributes (ShipmentId, PaymentId,
 * PaymentEventType, SettleDeliveryState `pending`) and summary set from the start, so the run is found
 * by its shipment before it has run. `reusePolicy: 'ALLOW_DUPLICATE'` is for an operator's replay.
 */
export function startPaymentWorkflow(
  client: Client,
  taskQueue: string,
  event: PaymentEvent,
  options: { reusePolicy?: ReusePolicy; priority?: StartPriority } = {},
): Promise<StartResult> {
  const args: Parameters<typeof paymentWorkflow> = [{ event }];
  return startOnce(client, 'paymentWorkflow', {
    taskQueue,
    workflowId: paymentWorkflowId(event.id),
    args,
    reusePolicy: options.reusePolicy,
    summary: paymentSummary(event),
    searchAttributes: paymentStartSearchAttributes(event),
    eager: true,
    priority: options.priority,
  });
}

/** A reminder's workflow, `reminder:<delivery id>`, refusing a duplicate like a payment's. */
export function startReminderWorkflow(
  client: Client,
  taskQueue: string,
  reminder: { deliveryId: string; dueAt: Date; contractId?: string },
): Promise<StartResult> {
  const args: Parameters<typeof reminderWorkflow> = [
    { deliveryId: reminder.deliveryId, dueAt: reminder.dueAt.toISOString() },
  ];
  return startOnce(client, 'reminderWorkflow', {
    taskQueue,
    workflowId: reminderWorkflowId(reminder.deliveryId),
    args,
    summary: reminderSummary(reminder),
  });
}
