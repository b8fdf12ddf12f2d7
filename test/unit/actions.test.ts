import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { countActions, type History } from '../../testkit/actions';

const HISTORIES = join(__dirname, '..', 'histories');
const read = (name: string): History => JSON.parse(readFileSync(join(HISTORIES, `${name}.json`), 'utf8'));
/** A history's name, its total and its actions by kind. */
type Row = [string, number, Record<string, number>];

/**
 * Each recorded history's billable actions, counted by hand from its events (event IDs in brackets):
 * the count Temporal Cloud's published rules give it. The payment runs here are those recorded
 * before the coalesce-search-attributes patch (test/histories/coalesce-search-attributes/).
 */
const BEFORE_COALESCE: Row[] = [
  // start [1]; one workflow task's local-activity markers [5, 8, 9]; three upserts [6, 7, 10].
  ['payment-applied-delivered', 5, { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 3 }],
  // start; the reconcile marker [5]; SettleOutcome [6] and SettleDeliveryState [7] as two upserts.
  ['payment-stale', 4, { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 2 }],
  ['payment-unmatched', 4, { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 2 }],
  ['payment-claim-existed', 4, { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 2 }],
  // start; the local reconcile [5]; the durable reconcile [6], first attempt; no upsert before failing.
  ['payment-conflict', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  // start; marker [5]; timer [6]; durable reconcile [11]; then a task of upserts [17, 18, 21] and markers.
  [
    'payment-lost-ack-retried',
    8,
    { workflowStart: 1, localActivities: 2, timer: 1, activity: 1, upsertSearchAttributes: 3 },
  ],
  // start; markers in tasks [4] and [20]; upserts [6, 7, 9, 21, 23]; timer [10]; the durable delivery
  // [15], started at attempt 2 [16]: one retry.
  [
    'payment-delivery-retried',
    11,
    {
      workflowStart: 1,
      localActivities: 2,
      upsertSearchAttributes: 5,
      timer: 1,
      activity: 1,
      activityRetries: 1,
    },
  ],
  // start; markers [5, 8, 9]; upserts [6, 7, 28, 29]; durable delivery, re-hold, compensation [10, 16, 22].
  [
    'payment-saga-compensated',
    9,
    { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 4, activity: 3 },
  ],
];

/** The reminders, as recorded by this version (the top level of test/histories/). */
const REMINDERS: Row[] = [
  // start; timer [5]; the cancel signal [6]; the patch's marker and the row's check (a local activity) [9].
  ['reminder-cancelled', 4, { workflowStart: 1, timer: 1, signal: 1, localActivities: 1 }],
  // start; timer [5]; delivery [10].
  ['reminder-delivered', 3, { workflowStart: 1, timer: 1, activity: 1 }],
  ['reminder-gone', 3, { workflowStart: 1, timer: 1, activity: 1 }],
];

/** One workflow task of local activities, then one upsert at the end: T3L's 2 + 1. */
const ONE_UPSERT = { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 1 };

/** A delivery retried: the same count in each version since the coalesce-search-attributes patch. */
const DELIVERY_RETRIED: Row = [
  'payment-delivery-retried',
  8,
  {
    workflowStart: 1,
    localActivities: 2,
    upsertSearchAttributes: 2,
    timer: 1,
    activity: 1,
    activityRetries: 1,
  },
];
/** A saga compensated, the same in the coalesced and first-pass versions. */
const SAGA_COMPENSATED: Row = [
  'payment-saga-compensated',
  7,
  { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 2, activity: 3 },
];

/**
 * The same scenarios with the workflow task's attribute changes sent as one upsert (the
 * coalesce-search-attributes patch): its marker [5] is one of the first task's markers, its
 * TemporalChangeVersion upsert [6] is exempt.
 */
const COALESCED: Row[] = [
  // start; markers [5, 7, 8, 9]; one upsert of SettleOutcome and SettleDeliveryState [10]: T3L's 2 + 1.
  ['payment-applied-delivered', 3, ONE_UPSERT],
  ['payment-stale', 3, ONE_UPSERT],
  ['payment-unmatched', 3, ONE_UPSERT],
  ['payment-claim-existed', 3, ONE_UPSERT],
  ['payment-conflict', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  // start; markers in tasks [4] and [18]; timer [8]; durable reconcile [13]; one upsert [21].
  [
    'payment-lost-ack-retried',
    6,
    { workflowStart: 1, localActivities: 2, timer: 1, activity: 1, upsertSearchAttributes: 1 },
  ],
  // `retrying` shown before the wait [9], `delivered` at the end [22]; timer [10]; delivery [15] at
  // attempt 2 [16].
  DELIVERY_RETRIED,
  // `delivering` before the durable delivery [10], `compensated` at the end [29]; activities [11, 17, 23].
  SAGA_COMPENSATED,
];

/**
 * The same scenarios with the first pass (the reconcile-and-deliver patch): the reconcile and the
 * first deliveries are one local activity, so one marker wherever the run did not wait. Recorded
 * before the exceptions-only view (test/histories/exceptions-only-view/).
 */
const FIRST_PASS: Row[] = [
  // start; the patch markers and the first pass's marker; one upsert: T3L's 2 + 1.
  ['payment-applied-delivered', 3, ONE_UPSERT],
  ['payment-encrypted-applied-delivered', 3, ONE_UPSERT],
  ['payment-stale', 3, ONE_UPSERT],
  ['payment-unmatched', 3, ONE_UPSERT],
  ['payment-claim-existed', 3, ONE_UPSERT],
  ['payment-conflict', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  ['payment-unadmitted', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  // The first pass lost its completion: a timer, the durable reconcile (which finds the rows the pass
  // delivered), one upsert at the end; no second marker.
  [
    'payment-lost-ack-retried',
    5,
    { workflowStart: 1, localActivities: 1, timer: 1, activity: 1, upsertSearchAttributes: 1 },
  ],
  // The carrier's first call (in the pass) failed: `retrying` before the wait, a timer, the durable
  // delivery and its retry, then the ERP's local delivery in the last task, `delivered` at the end.
  DELIVERY_RETRIED,
  SAGA_COMPENSATED,
];

/**
 * This version's runs (the exceptions-only-view patch): SettleOutcome and SettleDeliveryState only once
 * a run leaves the happy path, so the happy path is T3L's 2: its start and one workflow task of local
 * activities (the patch's marker among them, its TemporalChangeVersion upsert exempt).
 */
const EXCEPTIONS_ONLY: Row[] = [
  ['payment-applied-delivered', 2, { workflowStart: 1, localActivities: 1 }],
  ['payment-encrypted-applied-delivered', 2, { workflowStart: 1, localActivities: 1 }],
  ['payment-traced-applied-delivered', 2, { workflowStart: 1, localActivities: 1 }],
  // The claim was there and its rows delivered: applied, nothing left to deliver, the happy path.
  ['payment-claim-existed', 2, { workflowStart: 1, localActivities: 1 }],
  // Off the happy path by its outcome: one upsert of SettleOutcome at the end.
  ['payment-stale', 3, ONE_UPSERT],
  ['payment-unmatched', 3, ONE_UPSERT],
  // The reconcile's refusal fails the run before anything is shown.
  ['payment-conflict', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  ['payment-unadmitted', 3, { workflowStart: 1, localActivities: 1, activity: 1 }],
  // The first pass lost its completion: a timer and the durable reconcile, then delivered: no upsert.
  ['payment-lost-ack-retried', 4, { workflowStart: 1, localActivities: 1, timer: 1, activity: 1 }],
  // `retrying` before the wait, kept current as `delivered` at the end.
  DELIVERY_RETRIED,
  // Nothing shown before the refusal; `needs_review` and `compensated` in one upsert at the end.
  [
    'payment-saga-compensated',
    6,
    { workflowStart: 1, localActivities: 1, upsertSearchAttributes: 1, activity: 3 },
  ],
];

describe('billable actions counted from a history', () => {
  for (const [name, total, byKind] of EXCEPTIONS_ONLY) {
    test(`exceptions only ${name}: ${total}`, () => {
      assert.deepEqual(countActions(read(name)), { total, byKind });
    });
  }

  for (const [name, total, byKind] of COALESCED) {
    test(`coalesced ${name}: ${total}`, () => {
      assert.deepEqual(countActions(read(`reconcile-and-deliver/${name}`)), { total, byKind });
    });
  }

  for (const [name, total, byKind] of FIRST_PASS) {
    test(`first pass ${name}: ${total}`, () => {
      assert.deepEqual(countActions(read(`exceptions-only-view/${name}`)), { total, byKind });
    });
  }

  for (const [name, total, byKind] of BEFORE_COALESCE) {
    test(`before coalescing ${name}: ${total}`, () => {
      assert.deepEqual(countActions(read(`coalesce-search-attributes/${name}`)), { total, byKind });
    });
  }

  for (const [name, total, byKind] of REMINDERS) {
    test(`${name}: ${total}`, () => {
      assert.deepEqual(countActions(read(name)), { total, byKind });
    });
  }

  test('the SDK-decoded history (enum numbers, Longs) counts the same as the CLI JSON', () => {
    for (const [name, total] of [...EXCEPTIONS_ONLY, ...REMINDERS]) {
      const decoded = historyFromJSON(read(name)) as unknown as History;
      assert.equal(countActions(decoded).total, total, name);
    }
  });

  test("a worker's answered queries are added; they leave nothing in the history", () => {
    const counted = countActions(read('payment-applied-delivered'), { queries: 1 });
    assert.equal(counted.total, 3);
    assert.equal(counted.byKind.query, 1);
  });

  test('rules the recorded runs do not exercise: schedule, versioning, local retries, heartbeats', () => {
    const history: History = {
      events: [
        {
          eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
          workflowExecutionStartedEventAttributes: {
            searchAttributes: { indexedFields: { TemporalScheduledById: {} } },
          },
        },
        { eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED' },
        { eventType: 'EVENT_TYPE_MARKER_RECORDED' },
        {
          eventType: 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
          upsertWorkflowSearchAttributesEventAttributes: {
            searchAttributes: { indexedFields: { TemporalChangeVersion: {} } },
          },
        },
        // A workflow-task heartbeat: the next task's markers are one more action, its retries too.
        {
          eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
          workflowTaskCompletedEventAttributes: {
            meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 },
          },
        },
        { eventType: 'EVENT_TYPE_MARKER_RECORDED' },
        { eventType: 'EVENT_TYPE_MARKER_RECORDED' },
        { eventType: 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED' },
      ],
    };
    assert.deepEqual(countActions(history), {
      total: 1 + 2 + 2 + 2 + 2,
      byKind: {
        workflowStart: 1,
        schedule: 2,
        localActivities: 2,
        localActivityRetries: 2,
        childWorkflow: 2,
      },
    });
  });
});
