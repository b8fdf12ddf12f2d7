import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PROVIDER_NAMES } from '../providers/registry';
import { renderTemporalMetrics } from './temporal-metrics';

/** One registry per process: a `settle start` process serves gateway and worker figures together. */
const registry = new Registry();
collectDefaultMetrics({ register: registry });

/**
 * Outcome labels of settle_webhooks_total, one per row of SPEC.md's response table, plus `unmatched`
 * (a provider event naming no shipment, answered 200 and kept as an exception).
 */
export type WebhookOutcome =
  'accepted' | 'duplicate' | 'ignored' | 'unmatched' | 'conflict' | 'rejected' | 'unavailable';

export const webhooksTotal = new Counter({
  name: 'settle_webhooks_total',
  help:
    `Webhook requests by route (/webhooks/payments, ${PROVIDER_NAMES.map((name) => `/webhooks/${name}`).join(', ')}) and outcome; ` +
    '`error` is the stable error code of refusals.',
  labelNames: ['route', 'outcome', 'error'] as const,
  registers: [registry],
});

export const webhookAckSeconds = new Histogram({
  name: 'settle_webhook_ack_seconds',
  help: 'Time from request to response (the acknowledgement the provider waits for), by route and outcome.',
  labelNames: ['route', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const startOutcomeUnknownTotal = new Counter({
  name: 'settle_start_outcome_unknown_total',
  help:
    'Workflow starts answered 503 whose outcome was unknown (deadline passed or connection broken ' +
    'mid-call); the retry may then be a duplicate. Each is recorded for `settle inspect`.',
  registers: [registry],
});

export const poolWaitTimeoutsTotal = new Counter({
  name: 'settle_pool_wait_timeouts_total',
  help:
    'Gateway requests answered 503 (database_unavailable, Retry-After) because no PostgreSQL connection ' +
    'of the pool came free within SETTLE_ADMISSION_WAIT; nothing was written.',
  registers: [registry],
});

export const reconcileOutcomesTotal = new Counter({
  name: 'settle_reconcile_outcomes_total',
  help: 'Completed reconciles by outcome (applied, stale, unmatched, needs_review).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const duplicateClaimsTotal = new Counter({
  name: 'settle_duplicate_claims_total',
  help: 'Reconciles that found the claim already there: the second layer refused a repeat effect.',
  registers: [registry],
});

export const eventToCommitSeconds = new Histogram({
  name: 'settle_event_to_commit_seconds',
  help: 'From receipt of an event (events.received_at) to the commit of its claim (claims.claimed_at).',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  registers: [registry],
});

export const transactionFailuresTotal = new Counter({
  name: 'settle_transaction_failures_total',
  help: 'Failed attempts of the reconcile transaction, by error code (retried unless non-retryable).',
  labelNames: ['code'] as const,
  registers: [registry],
});

export const paymentMismatchesTotal = new Counter({
  name: 'settle_payment_mismatches_total',
  help:
    'Payments not applied because they do not match their shipment (reason: amount_short, amount_over, ' +
    'amount_inexact, currency_differs, account_not_allowed). Each is a `needs_review` exception; nothing ' +
    'was released.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const providerDeliveriesRefusedTotal = new Counter({
  name: 'settle_provider_deliveries_refused_total',
  help:
    'Signed provider deliveries refused as not what the provider sent, by provider and reason: ' +
    'transmission_reused (another body under a transmission ID already taken: a provider whose signature ' +
    "binds the body only weakly), event_not_confirmed (the provider's API has no such event, or one that decides " +
    'otherwise). Nothing of them was admitted; each is worth a look (docs/operations.md).',
  labelNames: ['provider', 'reason'] as const,
  registers: [registry],
});

export const unadmittedRunsTotal = new Counter({
  name: 'settle_unadmitted_runs_total',
  help:
    'Runs settle did not start, by reason: refused by the reconcile because settle never stored their ' +
    'event with that payload (not_stored, payload_differs); found holding a workflow ID settle started, ' +
    'terminated and replaced (foreign_start); failed on their input before any step (invalid_input). ' +
    'Nothing of them was applied. Each is an `unadmitted_run` exception; counted once per run.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const activityOutcomesTotal = new Counter({
  name: 'settle_activity_outcomes_total',
  help: 'Activity attempts by activity type and outcome (completed, failed).',
  labelNames: ['activity', 'outcome'] as const,
  registers: [registry],
});

export const deliveriesTotal = new Counter({
  name: 'settle_deliveries_total',
  help:
    'Downstream delivery attempts by target (carrier, erp, customer), action, outcome (delivered, retry, ' +
    'permanent, not_configured) and code (the HTTP status, or timeout, network, target_refused, aborted; none ' +
    'for a target with no URL).',
  labelNames: ['target', 'action', 'outcome', 'code'] as const,
  registers: [registry],
});

export const targetHeldTotal = new Counter({
  name: 'settle_target_held_total',
  help:
    'Calls settle held back before sending them, by target and reason (paused: a Retry-After; failing, ' +
    'probing: the target fails and one probe at a time goes; in_flight, rate: its limits).',
  labelNames: ['target', 'reason'] as const,
  registers: [registry],
});

export const purgedClaimsTotal = new Counter({
  name: 'settle_purged_claims_total',
  help: 'Claims dropped past SETTLE_CLAIM_RETENTION.',
  registers: [registry],
});

export const recoveredEventsTotal = new Counter({
  name: 'settle_recovered_events_total',
  help: 'Events a provider listed but never delivered, admitted by the recovery sweep or settle recover.',
  labelNames: ['provider'] as const,
  registers: [registry],
});

export const recoverySweepFailuresTotal = new Counter({
  name: 'settle_recovery_sweep_failures_total',
  help: "Recovery sweep attempts that ended on a fault, by reason (unauthorized: the provider refused settle's API key).",
  labelNames: ['provider', 'reason'] as const,
  registers: [registry],
});

// The gauges below are read from PostgreSQL at scrape time, so every process would export the same
// figures: only the gateway exports them (see docs/operations.md), so that a sum does not double-count.
// They live in a registry of their own, rendered only when the caller hands over the database.
const databaseRegistry = new Registry();

const outboxPending = new Gauge({
  name: 'settle_outbox_pending',
  help: 'Outbox rows not yet delivered downstream (read from PostgreSQL by the gateway at scrape time).',
  registers: [databaseRegistry],
});

const outboxOldestPendingAge = new Gauge({
  name: 'settle_outbox_oldest_pending_age_seconds',
  help: 'Age of the oldest undelivered outbox row; 0 when none is pending (PostgreSQL, gateway only).',
  registers: [databaseRegistry],
});

const reminderOldestOverdueAge = new Gauge({
  name: 'settle_reminders_oldest_overdue_age_seconds',
  help: 'How long the most overdue undelivered reminder has been due; 0 when none is overdue (gateway only).',
  registers: [databaseRegistry],
});

const openExceptionsGauge = new Gauge({
  name: 'settle_open_exceptions',
  help: 'Open exceptions by kind: the list `settle exceptions` prints (PostgreSQL and Temporal, gateway only).',
  labelNames: ['kind'] as const,
  registers: [databaseRegistry],
});

const targetOpenGauge = new Gauge({
  name: 'settle_target_open',
  help:
    'Whether a delivery target is open (1): failing without a success for its SETTLE_<TARGET>_OPEN_AFTER, ' +
    'probed one call at a time (PostgreSQL, gateway only).',
  labelNames: ['target'] as const,
  registers: [databaseRegistry],
});

/** The figures the gateway reads from PostgreSQL (and, for exceptions, Temporal) at scrape time. */
export type DatabaseFigures = {
  /** Each delivery target: whether it is open. */
  targetOpen: Record<string, boolean>;
  outboxPending: number;
  outboxOldestPendingAgeSeconds: number;
  reminderOldestOverdueAgeSeconds: number;
  openExceptionsByKind: Record<string, number>;
};

/**
 * The Prometheus text of `GET /metrics`: settle's counters and histograms, the Temporal SDK's own, and
 * for the gateway the gauges read from PostgreSQL (`database`: the figures now, or null when it did not
 * answer, which leaves each gauge at its last value). A process without `database` exports none of them.
 */
export async function renderMetrics(database?: DatabaseFigures | null): Promise<string> {
  if (database) {
    outboxPending.set(database.outboxPending);
    outboxOldestPendingAge.set(database.outboxOldestPendingAgeSeconds);
    reminderOldestOverdueAge.set(database.reminderOldestOverdueAgeSeconds);
    for (const [target, open] of Object.entries(database.targetOpen)) {
      targetOpenGauge.set({ target }, open ? 1 : 0);
    }
    for (const [kind, count] of Object.entries(database.openExceptionsByKind)) {
      openExceptionsGauge.set({ kind }, count);
    }
  }
  const gauges = database === undefined ? '' : await databaseRegistry.metrics();
  return `${await registry.metrics()}${gauges}${renderTemporalMetrics()}`;
}

export const METRICS_CONTENT_TYPE = registry.contentType;
