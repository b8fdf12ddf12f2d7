import type { Command } from 'commander';
import { DEFAULT_MAX_BACKLOG } from '../../app/import-pace';
import { CliError } from '../errors';

export function registerImport(program: Command) {
  program
    .command('import')
    .description(
      "Feed a provider's event report (one JSON event per line) through the same path as the webhook. " +
        'Events already known count as duplicates, so rerunning after an interrupted or partial run ' +
        'applies only what is missing. Ctrl-C stops reading, lets lines in flight finish and prints the summary.',
    )
    .argument('<file.jsonl>', 'the report: one event per line, as the provider sends them')
    .option(
      '--provider <name>',
      "stripe or adyen: the file is that provider's own export (Stripe event objects, Adyen " +
        'NotificationRequestItems, one a line), read through the same adapter as /webhooks/stripe or /webhooks/adyen; ' +
        'under SETTLE_PROVIDER_MODE an event of the other mode is ignored',
    )
    .option('--concurrency <n>', 'lines in flight at once', parseCount, 4)
    .option(
      '--max-backlog <n>',
      'imported runs started but not yet reconciled before the import waits for the workers to catch up ' +
        '(they run on the bulk task queue, <queue>-bulk), so that an import never floods Temporal ahead of ' +
        'live traffic; 0 never waits',
      parseBacklog,
      DEFAULT_MAX_BACKLOG,
    )
    .option(
      '--json',
      'print the summary as JSON (progress stays on stderr: a bar on a terminal, otherwise a plain line at least every 10 s)',
    )
    .action(
      async (
        file: string,
        options: { concurrency: number; maxBacklog: number; json?: boolean; provider?: string },
      ) => (await import('../actions/import.js')).importReportFile(file, options),
    );
}

function parseBacklog(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 100_000)
    throw new CliError('--max-backlog must be an integer from 0 to 100000');
  return n;
}

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new CliError('--concurrency must be an integer from 1 to 256');
  return n;
}
