import type { Command } from 'commander';
import type { SimulateOptions } from '../actions/simulate';

export function registerSimulate(program: Command) {
  program
    .command('simulate')
    .description(
      'A payment provider simulator: signed events (authorized, captured, settled per payment) at a chosen ' +
        'rate against any gateway, with shares of immediate duplicates, late replays and out-of-order events. ' +
        'Signs with the first of SETTLE_WEBHOOK_SECRETS (the running stack’s development secret by default). ' +
        'With --provider stripe|adyen it sends that provider’s own events (authorized, captured, refunded per ' +
        'payment) to /webhooks/stripe or /webhooks/adyen, signed with the provider’s library and the first of ' +
        'SETTLE_STRIPE_WEBHOOK_SECRETS or SETTLE_ADYEN_HMAC_KEYS (and SETTLE_ADYEN_BASIC_AUTH if set).',
    )
    .option('--provider <name>', 'send as stripe or adyen instead of Standard Webhooks')
    .option('--gateway <url>', 'gateway base URL (default: the running stack’s, or http://127.0.0.1:$PORT)')
    .option('--count <n>', 'distinct events to send', '300')
    .option('--rate <per-second>', 'requests per second, repeats included', '20')
    .option('--duration <duration>', 'stop after this long whatever is left', '5m')
    .option('--duplicates <share>', 'share of events sent twice in a row (0..1)', '0.1')
    .option('--late <share>', 'share of events sent again after all others (0..1)', '0.05')
    .option('--out-of-order <share>', 'share of payments whose settled comes before captured (0..1)', '0.1')
    .option('--seed <n>', 'same seed, same traffic')
    .option('--run-id <id>', 'prefix of the generated IDs (default: a new one)')
    .option('--add-shipments', 'add the simulated shipments to DATABASE_URL first, so events apply')
    .option(
      '--out <report.jsonl>',
      'send nothing: write the same traffic as a provider report (one event per line) for settle import',
    )
    .option('--json', 'print the summary as JSON')
    .action(async (options: SimulateOptions) => (await import('../actions/simulate.js')).simulate(options));
}
