import type { Command } from 'commander';

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
    .action(async (options: { since: string; metricsUrl?: string; json?: boolean }) =>
      (await import('../actions/stats.js')).stats(options),
    );
}
