import type { Command } from 'commander';

export function registerRecover(program: Command) {
  program
    .command('recover')
    .description(
      "List a provider's events and admit every one settle never received, through the same path as its " +
        'webhook: an event already admitted is a duplicate and changes nothing. Without --since it lists from ' +
        "the recovery sweep's durable cursor (what the Schedule does every SETTLE_STRIPE_SWEEP_EVERY). Needs " +
        'SETTLE_STRIPE_API_KEY (or _FILE); a restricted key with read access to Events is enough. Ctrl-C stops ' +
        'between events and prints the summary.',
    )
    .requiredOption('--provider <name>', 'stripe (the one provider with an events API; docs/providers.md)')
    .option(
      '--since <duration>',
      'list the events created in this window (e.g. 72h; Stripe lists 30 days) instead of from the cursor; ' +
        'the cursor moves only if the window reaches back to it',
    )
    .option('--dry-run', 'say what would be admitted and refused; admit, record and move nothing')
    .option(
      '--json',
      'print the summary as JSON (progress stays on stderr: a bar on a terminal, otherwise a plain line at least every 10 s)',
    )
    .action(async (options: { provider: string; since?: string; dryRun?: boolean; json?: boolean }) =>
      (await import('../actions/recover.js')).recover(options),
    );
}
