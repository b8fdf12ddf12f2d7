import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from './config';
import { activeTracing } from './tracing/tracing';
import { paymentWorkflowId, reminderWorkflowId } from './domain/ids';
import type { PaymentEvent } from './domain/payment-event';
import { temporalConnectionOptions, type TemporalConnectionConfig } from './temporal/connection';
import { settleDataConverter, type PayloadKeysConfig } from './temporal/data-converter';
import { bulkTaskQueue } from './temporal/task-queues';
import { GrpcStatus } from './temporal/grpc-status';
import { paymentStartSearchAttributes, paymentSummary, reminderSummary } from './workflows/search-attributes';
import { payloadSha256 } from './lib/hash';
import { RUN_MARK_MEMO, runMark, type RunMarkSpec } from './temporal/run-mark';
import type { Queryable } from './db/pool';
import { isSettleRun, latestSettleRunId, recordSettleRun } from './db/settle-runs';
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

/** With tracing on, each start is a StartWorkflow span whose context the run continues (tracing/tracing.ts). */
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

/** A run settle did not start (its run ID is not recorded) that held the workflow ID; ended if it was open. */
export type ForeignRun = { workflowId: string; runId: string; workflowType: string; status: string };

export type StartResult =
  | {
      started: true;
      workflowId: string;
      runId: string;
      eagerlyStarted: boolean;
      /** Runs settle did not start found under the ID, in the order found: the caller records them. */
      displaced: ForeignRun[];
    }
  /** The ID is held by an open or closed run settle started and recorded (`runId`): the normal duplicate. */
  | { started: false; workflowId: string; runId: string };

type ReusePolicy = 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE';

/** How many runs settle did not start one start looks past before it gives up (someone racing it). */
const MAX_LOOKS = 4;

/** The reason a displaced run's termination carries (Temporal UI, its history). */
const FOREIGN_RUN_REASON =
  'settle did not start this run (settle has no record of its run ID), and it held the workflow ID of ' +
  'an event settle admits: terminated so that settle starts its own (settle exceptions: unadmitted_run)';

/** The statuses of a closed run; any other (running, paused, one this SDK does not name) is open. */
const CLOSED_STATUSES = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'TERMINATED',
  'CONTINUED_AS_NEW',
  'TIMED_OUT',
]);

/**
 * Bulk work (`settle import`) runs on its own task queue (task-queues.ts), and at Temporal's lowest
 * task priority (1 first … 5 last; unset is 3), so that matching too serves live tasks first where
 * the two meet. Live traffic (webhooks, replays) keeps the configured queue and the default priority.
 */
export const BULK_PRIORITY_KEY = 5;
export type StartPriority = 'live' | 'bulk';

/**
 * Starts a workflow under its deterministic ID and records the run ID Temporal gave it in
 * `settle_runs`, on `runs` (an admission's transaction, so the record commits with the event's row).
 * REJECT_DUPLICATE and FAIL make Temporal refuse a second start while it remembers the ID: the cheap
 * first layer; the claim in PostgreSQL is the one that decides. A refused start looks at the run that
 * holds the ID, by its raw description (no payload of it is decoded, so a memo nobody can read is no
 * error): settle's own is a run of this type on this task queue (or its bulk queue) whose run ID, or
 * whose chain's first run ID (a reset run), settle recorded; the start is then `started: false` (the
 * normal duplicate). Any other run (started on Temporal's frontend by someone else, perhaps with a
 * start delay to take the ID, or with a copy of a settle run's memo) is terminated while it is open
 * (running, paused, anything not closed), returned in `displaced`, and the start is made again: with
 * ALLOW_DUPLICATE_FAILED_ONLY after a termination or a failed foreign run, so that a run settle
 * started in between (a concurrent start) still refuses it, and with ALLOW_DUPLICATE past a foreign
 * run that completed. The memo still carries the run mark (temporal/run-mark.ts) for processes of
 * the previous release, which read it; nothing here trusts it. Anything else (Temporal unreachable
 * past the deadline) is thrown, and the caller answers 503.
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
    /** The mark the previous release reads in the run's memo. */
    mark: RunMarkSpec;
    /** Where settle records the run it starts, and looks up a run found under the ID. */
    runs: Queryable;
  },
): Promise<StartResult> {
  const { workflowId, args } = options;
  const bulk = options.priority === 'bulk';
  const taskQueue = bulk ? bulkTaskQueue(options.taskQueue) : options.taskQueue;
  const displaced: ForeignRun[] = [];
  let looks = 0;
  let reusePolicy: keyof typeof WorkflowIdReusePolicy = options.reusePolicy ?? 'REJECT_DUPLICATE';
  for (;;) {
    try {
      const handle = await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        client.workflow.start(workflowType, {
          taskQueue,
          workflowId,
          args,
          workflowIdReusePolicy: WorkflowIdReusePolicy[reusePolicy],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
          staticSummary: options.summary,
          memo: { [RUN_MARK_MEMO]: runMark(options.mark, workflowId) },
          ...(options.searchAttributes ? { typedSearchAttributes: options.searchAttributes } : {}),
          // Eager dispatch would hand a bulk run to this process's live slots: bulk runs queue.
          requestEagerStart: options.eager === true && !bulk && onWorkerConnection.has(client),
          ...(bulk ? { priority: { priorityKey: BULK_PRIORITY_KEY } } : {}),
        }),
      );
      await recordSettleRun(options.runs, workflowId, handle.firstExecutionRunId);
      return {
        started: true,
        workflowId,
        runId: handle.firstExecutionRunId,
        eagerlyStarted: handle.eagerlyStarted,
        displaced,
      };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    const holder = await runHoldingId(client, workflowId);
    // Gone between the refusal and the look (retention, a reset): start again as asked.
    if (!holder) continue;
    const ownQueue = [options.taskQueue, bulkTaskQueue(options.taskQueue)].includes(holder.taskQueue);
    if (
      holder.type === workflowType &&
      ownQueue &&
      (await isSettleRun(options.runs, workflowId, [holder.runId, holder.firstRunId]))
    ) {
      return { started: false, workflowId, runId: holder.runId };
    }
    looks += 1;
    if (looks > MAX_LOOKS) {
      throw new Error(`${displaced.length} runs settle did not start kept this workflow ID from it`);
    }
    const foreign: ForeignRun = {
      workflowId,
      runId: holder.runId,
      workflowType: holder.type,
      status: holder.status,
    };
    // The same run again (it closed between the look and the start): recorded once, as last seen.
    const seen = displaced.findIndex((run) => run.runId === holder.runId);
    if (seen >= 0) displaced[seen] = foreign;
    else displaced.push(foreign);
    if (!CLOSED_STATUSES.has(holder.status)) await terminateForeign(client, foreign);
    // An operator's ALLOW_DUPLICATE stays; else only a foreign run that completed is passed over by
    // ALLOW_DUPLICATE, and FAILED_ONLY (terminated, failed, timed out) keeps refusing settle's own.
    if (reusePolicy !== 'ALLOW_DUPLICATE') {
      reusePolicy = holder.status === 'COMPLETED' ? 'ALLOW_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY';
    }
  }
}

type Holder = {
  runId: string;
  firstRunId: string;
  type: string;
  taskQueue: string;
  status: string;
  versioningInfo: temporal.api.workflow.v1.IWorkflowExecutionVersioningInfo | null | undefined;
};

/**
 * A run under a workflow ID (the latest, or the one `runId` names), or undefined when Temporal has
 * none. Read raw from the frontend: its memo and search attributes stay undecoded, so a payload no
 * codec can read (encrypted under a key nobody holds) changes nothing here.
 */
async function runHoldingId(
  client: Client,
  workflowId: string,
  options: { runId?: string; deadlineMs?: number } = {},
): Promise<Holder | undefined> {
  try {
    const described = await client.connection.withDeadline(
      Date.now() + (options.deadlineMs ?? START_DEADLINE_MS),
      () =>
        client.workflowService.describeWorkflowExecution({
          namespace: client.options.namespace,
          execution: { workflowId, ...(options.runId ? { runId: options.runId } : {}) },
        }),
    );
    const info = described.workflowExecutionInfo;
    const status = temporal.api.enums.v1.WorkflowExecutionStatus[info?.status ?? 0] ?? 'UNKNOWN';
    return {
      runId: info?.execution?.runId ?? '',
      firstRunId: info?.firstRunId ?? '',
      type: info?.type?.name ?? '',
      taskQueue: info?.taskQueue ?? '',
      status: status.replace(/^WORKFLOW_EXECUTION_STATUS_/, ''),
      versioningInfo: info?.versioningInfo,
    };
  } catch (error) {
    // NotFound names a missing namespace too: that is an error, not an ID with no run.
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code === GrpcStatus.NOT_FOUND && !/namespace/i.test(String(message))) return undefined;
    throw error;
  }
}

/**
 * Settle's own run under a workflow ID, for the operator's views (inspect, the exceptions' check
 * whether a run still delivers): the latest run when settle recorded it (or its chain's first), else
 * the run settle recorded last. A run settle never recorded is never shown as the event's, and its
 * memo is never decoded. An ID with no recorded run at all (started before runs were recorded) shows
 * the latest run, read raw. Undefined when Temporal has none of them.
 */
export async function describeSettleRun(
  client: Client,
  runs: Queryable,
  workflowId: string,
  deadlineMs: number,
): Promise<Holder | undefined> {
  const latest = await runHoldingId(client, workflowId, { deadlineMs });
  if (!latest || (await isSettleRun(runs, workflowId, [latest.runId, latest.firstRunId]))) return latest;
  const recorded = await latestSettleRunId(runs, workflowId);
  if (recorded === undefined) return latest;
  return runHoldingId(client, workflowId, { runId: recorded, deadlineMs });
}

async function terminateForeign(client: Client, run: ForeignRun): Promise<void> {
  try {
    await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      client.workflow.getHandle(run.workflowId, run.runId).terminate(FOREIGN_RUN_REASON),
    );
  } catch (error) {
    // Closed meanwhile (it failed, or a concurrent start terminated it): the start decides next.
    if (error instanceof WorkflowNotFoundError) return;
    throw error;
  }
}

/**
 * The event's workflow, `payment:<event id>`, with its search attributes (ShipmentId, PaymentId,
 * PaymentEventType) and summary set from the start, so the run is found
 * by its shipment before it has run. `reusePolicy: 'ALLOW_DUPLICATE'` is for an operator's replay.
 * `runs`: where the run is recorded as settle's (startOnce).
 */
export function startPaymentWorkflow(
  client: Client,
  taskQueue: string,
  event: PaymentEvent,
  options: { markKey: Buffer; runs: Queryable; reusePolicy?: ReusePolicy; priority?: StartPriority },
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
    mark: { key: options.markKey, binding: payloadSha256(event) },
    runs: options.runs,
  });
}

/** A reminder's workflow, `reminder:<delivery id>`, refusing a duplicate like a payment's. */
export function startReminderWorkflow(
  client: Client,
  taskQueue: string,
  reminder: { deliveryId: string; dueAt: Date; contractId?: string },
  options: { markKey: Buffer; runs: Queryable },
): Promise<StartResult> {
  const args: Parameters<typeof reminderWorkflow> = [
    { deliveryId: reminder.deliveryId, dueAt: reminder.dueAt.toISOString() },
  ];
  return startOnce(client, 'reminderWorkflow', {
    taskQueue,
    workflowId: reminderWorkflowId(reminder.deliveryId),
    args,
    summary: reminderSummary(reminder),
    mark: { key: options.markKey, binding: '' },
    runs: options.runs,
  });
}
