import type { Command } from 'commander';

export function registerPurge(program: Command) {
  program
    .command('purge')
    .description(
      'Drop claims (and their stored events) older than the retention; nothing younger, and never an open ' +
        "claim's exception. Provider exceptions (raw provider items, which can hold customers' details) " +
        'last delivered before the cutoff go too. The daily Temporal Schedule runs the same purge with ' +
        'SETTLE_CLAIM_RETENTION.',
    )
    .option('--older-than <duration>', 'cutoff age, e.g. 90d (default: SETTLE_CLAIM_RETENTION)')
    .option('--dry-run', 'count what would be dropped, drop nothing')
    .option(
      '--force',
      "purge even when the cutoff is not longer than the Temporal namespace's retention (or Temporal cannot say)",
    )
    .option('--json', 'print the result as JSON')
    .action(async (options: { olderThan?: string; dryRun?: boolean; force?: boolean; json?: boolean }) =>
      (await import('../actions/purge.js')).purge(options),
    );
}
