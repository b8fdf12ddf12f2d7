import type { Client } from '@temporalio/client';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { countByKind, DEFAULT_UNRECONCILED_AFTER_MS, openExceptions } from '../app/exceptions';
import type { Queryable } from '../db/pool';
import { outboxBacklog, reminderBacklog } from '../db/slo';
import { renderTemporalMetrics } from './temporal-metrics';

/** One registry per process: a `settle start` process serves gateway and worker figures together. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Outcome labels of settle_webhooks_total, one per row of SPEC.md's response table. */
export type WebhookOutcome = 'accepted' | 'duplicate' | 'ignored' | 'conflict' | 'rejected' | 'unavailable';

export const webhooksTotal = new Counter({
  name: 'settle_webhooks_total',
  help: 'Payment webhook requests by outcome; `error` is the stable error code of refusals.',
  labelNames: ['outcome', 'error'] as const,
  registers: [registry],
});

export const webhookAckSeconds = new Histogram({
  name: 'settle_webhook_ack_seconds',
  help: 'Time from request to response (the acknowledgement the provider waits for), by outcome.',
  labelNames: ['outcome'] as const,
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

export const purgedClaimsTotal = new Counter({
  name: 'settle_purged_claims_total',
  help: 'Claims dropped past SETTLE_CLAIM_RETENTION.',
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

/** What the gateway needs to export the figures read from PostgreSQL (and, for exceptions, Temporal). */
export type DatabaseGaugeSource = { db: Queryable; client: Client; deliveryStuckAfterMs: number };

/**
 * The Prometheus text of `GET /metrics`: settle's counters and histograms, with `source` (the gateway)
 * the gauges read from PostgreSQL now (left at their last value if it does not answer), and the
 * Temporal SDK's own.
 */
export async function renderMetrics(source?: DatabaseGaugeSource): Promise<string> {
  if (source) {
    const { db, client } = source;
    try {
      const backlog = await outboxBacklog(db);
      outboxPending.set(backlog.pending);
      outboxOldestPendingAge.set(backlog.oldestPendingAgeSeconds ?? 0);
      reminderOldestOverdueAge.set((await reminderBacklog(db)).oldestOverdueAgeSeconds ?? 0);
      const open = await openExceptions(
        { db, client },
        {
          unreconciledAfterMs: DEFAULT_UNRECONCILED_AFTER_MS,
          stuckAfterMs: source.deliveryStuckAfterMs,
          limit: null,
        },
      );
      for (const [kind, count] of Object.entries(countByKind(open.exceptions))) {
        openExceptionsGauge.set({ kind }, count);
      }
    } catch {
      // PostgreSQL down: /readyz says so; the scrape still serves everything else.
    }
  }
  const database = source ? await databaseRegistry.metrics() : '';
  return `${await registry.metrics()}${database}${renderTemporalMetrics()}`;
}

export const METRICS_CONTENT_TYPE = registry.contentType;
