import { listOpenTargets, type ExceptionKind } from '../db/exceptions';
import { listRecoveryStatus } from '../db/recovery-cursor';
import { OUTBOX_TARGETS } from '../domain/outbox';
import { computeSloFigures, outboxBacklog, reminderBacklog, type SloFigures } from '../db/slo';
import { histogramQuantile, parsePrometheusText, sumOf } from '../metrics/prometheus-text';
import { renderMetrics, type DatabaseFigures } from '../metrics/settle-metrics';
import { countOpenExceptions, DEFAULT_UNRECONCILED_AFTER_MS } from './exceptions';
import type { Services } from './services';

/** The figures read PostgreSQL and ask Temporal about abandoned deliveries. */
type StatsDeps = Pick<Services, 'pool' | 'client'> & { deliveryStuckAfterMs: number };

/** How long the gateway's figures read from PostgreSQL stand: a flood of scrapes reads them once. */
export const OPERATOR_FIGURES_TTL_MS = 1_000;

/** Open exceptions by kind (every kind, 0 when none) and in all: the list `settle exceptions` prints. */
async function countOpen(deps: StatsDeps): Promise<{ byKind: Record<ExceptionKind, number>; total: number }> {
  const byKind = await countOpenExceptions(deps, {
    unreconciledAfterMs: DEFAULT_UNRECONCILED_AFTER_MS,
    stuckAfterMs: deps.deliveryStuckAfterMs,
  });
  return { byKind, total: Object.values(byKind).reduce((sum, n) => sum + n, 0) };
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

/** A delivery target open now: failing without a success for its SETTLE_<TARGET>_OPEN_AFTER. */
export type OpenTargetFigures = {
  target: string;
  failing_since: string;
  failures: number;
  last_error: string | null;
};

export type StatsFigures = SloFigures & {
  open_exceptions: Record<ExceptionKind, number> & { total: number };
  targets_open: OpenTargetFigures[];
  recovery: RecoveryFigures[];
};

/** `settle stats`' figures from PostgreSQL (and Temporal, for abandoned deliveries) over the window. */
export async function statsFigures(deps: StatsDeps, windowMs: number): Promise<StatsFigures> {
  const slo = await computeSloFigures(deps.pool, { windowMs });
  const open = await countOpen(deps);
  const recovery = (await listRecoveryStatus(deps.pool)).map((row) => ({
    provider: row.provider,
    cursor_at: row.cursor?.createdAt.toISOString() ?? null,
    last_sweep_at: row.lastSweepAt?.toISOString() ?? null,
    last_sweep_error: row.lastSweepError,
    last_listed: row.lastListed,
    last_recovered: row.lastRecovered,
    recovered_total: row.recoveredTotal,
  }));
  const targetsOpen = (await listOpenTargets(deps.pool)).map((row) => ({
    target: row.target,
    failing_since: row.failingSince.toISOString(),
    failures: row.failures,
    last_error: row.lastError,
  }));
  return {
    ...slo,
    open_exceptions: { ...open.byKind, total: open.total },
    targets_open: targetsOpen,
    recovery,
  };
}

/**
 * The gateway's `GET /metrics`: every figure of the process, plus the gauges read from PostgreSQL
 * (counts, one statement at a time, so a scrape holds at most one connection). Those are read at most
 * once per OPERATOR_FIGURES_TTL_MS: every scrape meanwhile, or while they are being read, is answered
 * from the same reading. PostgreSQL down leaves the gauges at their last value: /readyz says so; the
 * scrape still serves the rest.
 */
export function gatewayMetrics(deps: StatsDeps): () => Promise<string> {
  let reading: Promise<DatabaseFigures | null> | undefined;
  let freshUntil = 0;
  return async () => {
    if (!reading || Date.now() >= freshUntil) {
      freshUntil = Infinity;
      reading = databaseFigures(deps)
        .catch(() => null)
        .finally(() => (freshUntil = Date.now() + OPERATOR_FIGURES_TTL_MS));
    }
    return renderMetrics(await reading);
  };
}

async function databaseFigures(deps: StatsDeps): Promise<DatabaseFigures> {
  const backlog = await outboxBacklog(deps.pool);
  const reminders = await reminderBacklog(deps.pool);
  const open = await countOpen(deps);
  const openTargets = new Set((await listOpenTargets(deps.pool)).map((row) => row.target));
  return {
    targetOpen: Object.fromEntries(OUTBOX_TARGETS.map((target) => [target, openTargets.has(target)])),
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

/**
 * A gateway's or worker's live figures; null when its /metrics does not answer within 3 s. `apiToken`
 * (SETTLE_API_TOKEN) is what a gateway's /metrics on PORT asks for; an operator listener asks none.
 */
export async function readLiveFigures(url: string, apiToken?: string): Promise<LiveFigures | null> {
  let text: string;
  try {
    const response = await fetch(url, {
      signal: AbortSignal.timeout(3_000),
      ...(apiToken ? { headers: { authorization: `Bearer ${apiToken}` } } : {}),
    });
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
