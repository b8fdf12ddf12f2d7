import type { Command } from 'commander';
import type { LiveFigures, StatsFigures } from '../../app/stats';
import type { Percentiles } from '../../db/slo';
import { parseDuration } from '../../domain/duration';
import { CliError } from '../errors';

export function registerStats(program: Command) {
  program
    .command('stats')
    .description(
      'The SLO figures: events and duplicates, claims by outcome and the duplicate-claim rate, ' +
        'event-to-commit latency (p50/p99), replay-safe recovery time, open exceptions by kind (the same set ' +
        '`settle exceptions` lists), outbox and reminder ' +
        'backlog, the delivery targets open (failing, probed one call at a time), all from PostgreSQL; plus webhooks by outcome, ack latency and transaction failures from ' +
        "a gateway's or worker's /metrics when one is reachable.",
    )
    .option('--since <duration>', 'the window, ending now', '24h')
    .option(
      '--metrics-url <url>',
      'a /metrics endpoint to read live figures from (default: the running stack)',
    )
    .option('--json', 'print the figures as JSON')
    .action(async (options: { since: string; metricsUrl?: string; json?: boolean }) => stats(options));
}

// The implementation: what it needs beyond commander is imported when the command runs.

async function stats(options: { since: string; metricsUrl?: string; json?: boolean }): Promise<void> {
  const windowMs = parseDuration(options.since);
  if (windowMs === undefined) throw new CliError('--since must be a duration such as 24h or 7d');
  const [{ readLiveFigures, statsFigures }, { loadSettings }, { output, withServices }] = await Promise.all([
    import('../../app/stats.js'),
    import('../../config/index.js'),
    import('../context.js'),
  ]);
  let gateway: string | undefined;
  let apiToken: string | undefined;
  const figures = await withServices(({ pool, client, config, env }) => {
    gateway = loadSettings(env).gatewayUrl;
    apiToken = config.apiToken;
    return statsFigures({ pool, client, deliveryStuckAfterMs: config.deliveryStuckAfterMs }, windowMs);
  });
  const metricsUrl = options.metricsUrl ?? (gateway ? `${gateway}/metrics` : undefined);
  const live = metricsUrl ? await readLiveFigures(metricsUrl, apiToken) : null;
  output(options.json, { ...figures, live }, renderStats);
}

const seconds = (value: number | null) =>
  value === null ? '-' : value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(1)} s`;
const latency = (p: Percentiles) =>
  `p50 ${seconds(p.p50)}  p99 ${seconds(p.p99)}  max ${seconds(p.max)}  (n=${p.count})`;
const entries = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ') || 'none';

function renderStats(s: StatsFigures & { live: LiveFigures | null }): string {
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
    `targets open           ${
      s.targets_open
        .map(
          (t) =>
            `${t.target} (failing since ${t.failing_since}, ${t.failures} failure(s)` +
            `${t.last_error ? `, last: ${t.last_error}` : ''}; one probe at a time)`,
        )
        .join(', ') || 'none'
    }`,
    ...(s.recovery.length
      ? s.recovery.map(
          (r) =>
            `recovered (${r.provider})     ${r.recovered_total} never delivered, in all; last sweep ` +
            `${r.last_sweep_at ?? '-'} ${r.last_sweep_error ? `FAILED: ${r.last_sweep_error}` : 'ok'}, listed ` +
            `${r.last_listed}, recovered ${r.last_recovered}; cursor at ${r.cursor_at ?? '-'}`,
        )
      : ['recovered              no recovery sweep has run (SETTLE_STRIPE_API_KEY unset?)']),
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
