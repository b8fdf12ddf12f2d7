import { temporal } from '@temporalio/proto';

/**
 * Temporal Cloud's billable actions of one workflow execution, counted from its event history by the
 * published rules: https://docs.temporal.io/cloud/actions (temporalio/documentation,
 * docs/evaluate/cloud/actions.mdx, read 2026-12-01). A pure function: the same history, the same count.
 *
 * - Workflow started: 1 (client start, Continue-As-New's new run, child start). A start by a Schedule
 *   (`TemporalScheduledById` among its search attributes) adds the Schedule's own 2.
 * - UpsertSearchAttributes command: 1 each, however many attributes it sets; those given at start are
 *   free, and so is an upsert of `TemporalChangeVersion` alone (versioning).
 * - Local activities: all RecordMarker commands of one workflow task together are 1 (a workflow-task
 *   heartbeat is a task of its own, so it adds 1); local attempts after the first, as the task's
 *   `meteringMetadata.nonfirstLocalActivityExecutionAttempts` reports them, 1 each (at most 100).
 * - Activity: 1 per scheduled activity and 1 per retry (its started event's `attempt` − 1).
 * - Timer started, signal received, update accepted, workflow options updated, Nexus operation
 *   scheduled or cancel requested: 1 each. Start Child Workflow initiated: 2. A reset: 1.
 * - Queries answered by a worker leave nothing in the history: the caller passes their number.
 * Replays cost nothing; an ID-deduplicated start (AlreadyStarted) has no history of its own: 0.
 */
export type ActionKind =
  | 'workflowStart'
  | 'schedule'
  | 'upsertSearchAttributes'
  | 'localActivities'
  | 'localActivityRetries'
  | 'activity'
  | 'activityRetries'
  | 'timer'
  | 'signal'
  | 'update'
  | 'query'
  | 'childWorkflow'
  | 'workflowOptions'
  | 'nexus'
  | 'reset';

export type ActionCount = { total: number; byKind: Partial<Record<ActionKind, number>> };

/** One history event as the CLI's JSON (`temporal workflow show -o json`) or the SDK's fetchHistory has it. */
type HistoryEvent = { eventType?: unknown } & Record<string, unknown>;
export type History = { events?: HistoryEvent[] | null };

const LOCAL_ACTIVITY_RETRY_CAP = 100;
const VERSIONING_ATTRIBUTE = 'TemporalChangeVersion';
const SCHEDULED_BY_ATTRIBUTE = 'TemporalScheduledById';
const SCHEDULE_START_ACTIONS = 2;

/** `EVENT_TYPE_WORKFLOW_TASK_COMPLETED`, whether the history spells it as a string or the enum number. */
function typeOf(event: HistoryEvent): string {
  const type = event.eventType;
  if (typeof type === 'number') return temporal.api.enums.v1.EventType[type] ?? String(type);
  return String(type ?? '');
}

function attributes(event: HistoryEvent, name: string): Record<string, unknown> {
  return (event[`${name}EventAttributes`] as Record<string, unknown> | undefined) ?? {};
}

function indexedFieldNames(attrs: Record<string, unknown>): string[] {
  const fields = (attrs.searchAttributes as { indexedFields?: Record<string, unknown> } | undefined)
    ?.indexedFields;
  return fields ? Object.keys(fields) : [];
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value) || 0;
  // Long from protobufjs
  if (value && typeof (value as { toNumber?: unknown }).toNumber === 'function')
    return (value as { toNumber: () => number }).toNumber();
  return 0;
}

export function countActions(history: History, options: { queries?: number } = {}): ActionCount {
  const byKind: Partial<Record<ActionKind, number>> = {};
  const add = (kind: ActionKind, n = 1) => {
    if (n > 0) byKind[kind] = (byKind[kind] ?? 0) + n;
  };
  // Markers belong to the workflow task whose completion they follow, until the next one completes.
  let taskHasMarker = false;
  const closeTask = () => {
    if (taskHasMarker) add('localActivities');
    taskHasMarker = false;
  };
  for (const event of history.events ?? []) {
    switch (typeOf(event)) {
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED': {
        add('workflowStart');
        const attrs = attributes(event, 'workflowExecutionStarted');
        if (indexedFieldNames(attrs).includes(SCHEDULED_BY_ATTRIBUTE))
          add('schedule', SCHEDULE_START_ACTIONS);
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED': {
        closeTask();
        const metering = attributes(event, 'workflowTaskCompleted').meteringMetadata as
          { nonfirstLocalActivityExecutionAttempts?: unknown } | undefined;
        const retries = toNumber(metering?.nonfirstLocalActivityExecutionAttempts);
        add('localActivityRetries', Math.min(retries, LOCAL_ACTIVITY_RETRY_CAP));
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_TASK_FAILED': {
        const cause = attributes(event, 'workflowTaskFailed').cause;
        const reset = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW;
        if (cause === reset || cause === 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW') add('reset');
        break;
      }
      case 'EVENT_TYPE_MARKER_RECORDED':
        taskHasMarker = true;
        break;
      case 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES': {
        const names = indexedFieldNames(attributes(event, 'upsertWorkflowSearchAttributes'));
        if (!names.every((name) => name === VERSIONING_ATTRIBUTE) || names.length === 0)
          add('upsertSearchAttributes');
        break;
      }
      case 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED':
        add('activity');
        break;
      case 'EVENT_TYPE_ACTIVITY_TASK_STARTED':
        add('activityRetries', toNumber(attributes(event, 'activityTaskStarted').attempt) - 1);
        break;
      case 'EVENT_TYPE_TIMER_STARTED':
        add('timer');
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED':
        add('signal');
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED':
        add('update');
        break;
      case 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED':
        add('childWorkflow', 2);
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED':
        add('workflowOptions');
        break;
      case 'EVENT_TYPE_NEXUS_OPERATION_SCHEDULED':
      case 'EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED':
        add('nexus');
        break;
    }
  }
  // A history that ends mid-task (still running) keeps its markers.
  closeTask();
  add('query', options.queries ?? 0);
  const total = Object.values(byKind).reduce((sum, n) => sum + n, 0);
  return { total, byKind };
}
