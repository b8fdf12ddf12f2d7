import type { ExceptionKind } from '../db/exceptions';
import { listRecoveryStatus } from '../db/recovery-cursor';
import { computeSloFigures, outboxBacklog, reminderBacklog, type SloFigures } from '../db/slo';
import { histogramQuantile, parsePrometheusText, sumOf } from '../metrics/prometheus-text';
import { renderMetrics, type DatabaseFigures } from '../metrics/settle-metrics';
import { countByKind, DEFAULT_UNRECONCILED_AFTER_MS, openExceptions } from './exceptions';
import type { Services } from './services';

/** The figures read PostgreSQL and ask Temporal about abandoned deliveries. */
type StatsDeps = Pick<Services, 'pool' | 'client'> & { deliveryStuckAfterMs: number };

/** Open exceptions by kind (every kind, 0 when none) and in all: the list `settle exceptions` prints. */
async function countOpenExceptions(
  deps: StatsDeps,
): Promise<{ byKind: Record<ExceptionKind, number>; total: number }> {
  const open = await openExceptions(deps, {
    unreconciledAfterMs: DEFAULT_UNRECONCILED_AFTER_MS,
    stuckAfterMs: deps.deliveryStuckAfterMs,
    limit: null,
  });
  return { byKind: countByKind(open.exceptions), total: open.exceptions.length };
}

/** The recovery sweep per provider: its cursor and its last run (null until a first run). */
export type RecoveryFigures = {
  provider: string;
  cursor_at: string | null;
  last_sweep_at: string | null;
  last_sweep_error: string | null;
  last_listed: number;
  last_recovered: number;
  recovered_total: number;
};

export type StatsFigures = SloFigures & {
  open_exceptions: Record<ExceptionKind, number> & { total: number };
  recovery: RecoveryFigures[];
};

/** `settle stats`' figures from PostgreSQL (and Temporal, for abandoned deliveries) over the window. */
export async function statsFigures(deps: StatsDeps, windowMs: number): Promise<StatsFigures> {
  const slo = await computeSloFigures(deps.pool, { windowMs });
  const open = await countOpenExceptions(deps);
  const recovery = (await listRecoveryStatus(deps.pool)).map((row) => ({
    provider: row.provider,
    cursor_at: row.cursor?.createdAt.toISOString() ?? null,
    last_sweep_at: row.lastSweepAt?.toISOString() ?? null,
    last_sweep_error: row.lastSweepError,
    last_listed: row.lastListed,
    last_recovered: row.lastRecovered,
    recovered_total: row.recoveredTotal,
  }));
  return { ...slo, open_exceptions: { ...open.byKind, total: open.total }, recovery };
}

/**
 * The gateway's `GET /metrics`: every figure of the process, plus the gauges read from PostgreSQL now.
 * PostgreSQL down leaves those at their last value: /readyz says so; the scrape still serves the rest.
 */
export async function gatewayMetrics(deps: StatsDeps): Promise<string> {
  const figures = await databaseFigures(deps).catch(() => null);
  return renderMetrics(figures);
}

async function databaseFigures(deps: StatsDeps): Promise<DatabaseFigures> {
  const backlog = await outboxBacklog(deps.pool);
  const reminders = await reminderBacklog(deps.pool);
  const open = await countOpenExceptions(deps);
  return {
    outboxPending: backlog.pending,
    outboxOldestPendingAgeSeconds: backlog.oldestPendingAgeSeconds ?? 0,
    reminderOldestOverdueAgeSeconds: reminders.oldestOverdueAgeSeconds ?? 0,
    openExceptionsByKind: open.byKind,
  };
}

const OUTCOMES = ['accepted', 'duplicate', 'ignored', 'conflict', 'rejected', 'unavailable'] as const;

/** Figures only a running process knows (since it started), read from its /metrics. */
export type LiveFigures = {
  source: string;
  webhooks: Record<string, number>;
  rejected_by_error: Record<string, number>;
  ack_seconds: { p50: number | null; p99: number | null };
  duplicate_claims: number;
  transaction_failures: number;
};

/** A gateway's or worker's live figures; null when its /metrics does not answer within 3 s. */
export async function readLiveFigures(url: string): Promise<LiveFigures | null> {
  let text: string;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    if (!response.ok) return null;
    text = await response.text();
  } catch {
    return null;
  }
  const samples = parsePrometheusText(text);
  const rejectedByError: Record<string, number> = {};
  for (const s of samples) {
    if (s.name === 'settle_webhooks_total' && s.labels.outcome === 'rejected' && s.value) {
      rejectedByError[s.labels.error || 'unknown'] =
        (rejectedByError[s.labels.error || 'unknown'] ?? 0) + s.value;
    }
  }
  return {
    source: url,
    webhooks: Object.fromEntries(
      OUTCOMES.map((o) => [o, sumOf(samples, 'settle_webhooks_total', { outcome: o })]),
    ),
    rejected_by_error: rejectedByError,
    ack_seconds: {
      p50: histogramQuantile(samples, 'settle_webhook_ack_seconds', 0.5),
      p99: histogramQuantile(samples, 'settle_webhook_ack_seconds', 0.99),
    },
    duplicate_claims: sumOf(samples, 'settle_duplicate_claims_total'),
    transaction_failures: sumOf(samples, 'settle_transaction_failures_total'),
  };
}
