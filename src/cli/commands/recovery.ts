import type { Command } from 'commander';

export function registerRecover(program: Command) {
  program
    .command('recover')
    .description(
      "List a provider's events and admit every one settle never received, through the same path as its " +
        'webhook: an event already admitted is a duplicate and changes nothing. Without --since it lists from ' +
        "the recovery sweep's durable cursor (what the Schedule does every SETTLE_STRIPE_SWEEP_EVERY or " +
        'SETTLE_PAYPAL_SWEEP_EVERY). Stripe needs SETTLE_STRIPE_API_KEY (or _FILE; read access to Events is ' +
        'enough), PayPal SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET. SETTLE_PROVIDER_MODE applies ' +
        'to every listed event. Ctrl-C stops between events and prints the summary.',
    )
    .requiredOption(
      '--provider <name>',
      'stripe or paypal (the providers with an events API; docs/providers.md)',
    )
    .option(
      '--since <duration>',
      'list the events created in this window (e.g. 72h; Stripe lists 30 days) instead of from the cursor; ' +
        'the cursor moves only if the window reaches back to it',
    )
    .option('--dry-run', 'say what would be admitted and refused; admit, record and move nothing')
    .option(
      '--max-retries <n>',
      'provider faults waited out before giving up with exit 75: a 429 after its Retry-After (at most 5 min), ' +
        '5xx and timeouts with backoff from 1 s; the summary names how many were used',
      '10',
    )
    .option(
      '--json',
      'print the summary as JSON (progress stays on stderr: a bar on a terminal, otherwise a plain line at least every 10 s)',
    )
    .action(
      async (options: {
        provider: string;
        since?: string;
        dryRun?: boolean;
        json?: boolean;
        maxRetries?: string;
      }) => (await import('../actions/recovery.js')).recover(options),
    );
}
