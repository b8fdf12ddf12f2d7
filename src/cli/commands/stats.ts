import type { Command } from 'commander';
import { countByKind, DEFAULT_UNRECONCILED_AFTER_MS, openExceptions } from '../../app/exceptions';
import type { ExceptionKind } from '../../db/exceptions';
import { computeSloFigures, type Percentiles, type SloFigures } from '../../db/slo';
import { parseDuration } from '../../domain/duration';
import { histogramQuantile, parsePrometheusText, sumOf } from '../../metrics/prometheus-text';
import { loadSettings } from '../../config';
import { CliError, output, withServices } from '../context';

const OUTCOMES = ['accepted', 'duplicate', 'ignored', 'conflict', 'rejected', 'unavailable'] as const;

/** Figures only a running process knows (since it started), read from its /metrics. */
type LiveFigures = {
  source: string;
  webhooks: Record<string, number>;
  rejected_by_error: Record<string, number>;
  ack_seconds: { p50: number | null; p99: number | null };
  duplicate_claims: number;
  transaction_failures: number;
};

export function registerStats(program: Command) {
  program
    .command('stats')
    .description(
      'The SLO figures: events and duplicates, claims by outcome and the duplicate-claim rate, ' +
        'event-to-commit latency (p50/p99), replay-safe recovery time, open exceptions by kind (the same set ' +
        '`settle exceptions` lists), outbox and reminder ' +
        'backlog, all from PostgreSQL; plus webhooks by outcome, ack latency and transaction failures from ' +
        "a gateway's or worker's /metrics when one is reachable.",
    )
    .option('--since <duration>', 'the window, ending now', '24h')
    .option(
      '--metrics-url <url>',
      'a /metrics endpoint to read live figures from (default: the running stack)',
    )
    .option('--json', 'print the figures as JSON')
    .action(async (options: { since: string; metricsUrl?: string; json?: boolean }) => {
      const windowMs = parseDuration(options.since);
      if (windowMs === undefined) throw new CliError('--since must be a duration such as 24h or 7d');
      let gateway: string | undefined;
      const figures = await withServices(async ({ pool, client, config, env }) => {
        gateway = loadSettings(env).gatewayUrl;
        const slo = await computeSloFigures(pool, { windowMs });
        const open = await openExceptions(
          { db: pool, client },
          {
            unreconciledAfterMs: DEFAULT_UNRECONCILED_AFTER_MS,
            stuckAfterMs: config.deliveryStuckAfterMs,
            limit: null,
          },
        );
        const byKind = countByKind(open.exceptions);
        return { ...slo, open_exceptions: { ...byKind, total: open.exceptions.length } };
      });
      const metricsUrl = options.metricsUrl ?? (gateway ? `${gateway}/metrics` : undefined);
      const live = metricsUrl ? await readLiveFigures(metricsUrl) : null;
      output(options.json, { ...figures, live }, renderStats);
    });
}

async function readLiveFigures(url: string): Promise<LiveFigures | null> {
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

const seconds = (value: number | null) =>
  value === null ? '-' : value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(1)} s`;
const latency = (p: Percentiles) =>
  `p50 ${seconds(p.p50)}  p99 ${seconds(p.p99)}  max ${seconds(p.max)}  (n=${p.count})`;
const entries = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ') || 'none';

type OpenExceptions = Record<ExceptionKind, number> & { total: number };

function renderStats(s: SloFigures & { open_exceptions: OpenExceptions; live: LiveFigures | null }): string {
  const { total, ...open } = s.open_exceptions;
  const lines = [
    `window                 ${s.window.since} → ${s.window.until}`,
    `events accepted        ${s.events.accepted} (${entries(s.events.by_source)})`,
    `duplicate deliveries   ${s.duplicate_deliveries}    conflicting (409) ${s.conflicting_deliveries}`,
    `claims                 ${s.claims.total} (${entries(s.claims.by_outcome)})`,
    `duplicate-claim rate   ${s.duplicate_claim_rate === null ? '-' : `${(s.duplicate_claim_rate * 100).toFixed(2)} %`} (${s.claims.repeat_claims} repeats refused by the claim)`,
    `event → commit         ${latency(s.event_to_commit_seconds)}`,
    `replay-safe recovery   ${latency(s.replay_recovery_seconds)}`,
    `open exceptions        ${total} (${entries(Object.fromEntries(Object.entries(open).filter(([, n]) => n > 0)))})`,
    `outbox                 pending ${s.outbox.pending}, oldest ${seconds(s.outbox.oldest_pending_age_seconds)}, failed ${s.outbox.failed}`,
    `reminders overdue      ${s.reminders.overdue}, oldest ${seconds(s.reminders.oldest_overdue_age_seconds)}`,
  ];
  if (s.live) {
    lines.push(
      '',
      `live, since the process started (${s.live.source})`,
      `webhooks               ${entries(s.live.webhooks)}`,
      `rejected by error      ${entries(s.live.rejected_by_error)}`,
      `ack latency            p50 ${seconds(s.live.ack_seconds.p50)}  p99 ${seconds(s.live.ack_seconds.p99)}`,
      `duplicate claims       ${s.live.duplicate_claims}    transaction failures ${s.live.transaction_failures}`,
    );
  } else {
    lines.push('', 'live figures: no /metrics reachable (pass --metrics-url http://gateway:8080/metrics)');
  }
  return lines.join('\n');
}
