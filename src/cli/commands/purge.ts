import type { Command } from 'commander';
import { purgeExpiredClaims, type PurgeResult } from '../../db/retention';
import { formatDuration, parseDuration } from '../../domain/duration';
import { resolveEnvironment } from '../../stack/dev-state';
import { CliError, output, withDatabase } from '../context';

export function registerPurge(program: Command) {
  program
    .command('purge')
    .description(
      'Drop claims (and their stored events) older than the retention; nothing younger, and never an open ' +
        'exception. The daily Temporal Schedule runs the same purge with SETTLE_CLAIM_RETENTION.',
    )
    .option('--older-than <duration>', 'cutoff age, e.g. 90d (default: SETTLE_CLAIM_RETENTION)')
    .option('--dry-run', 'count what would be dropped, drop nothing')
    .option('--json', 'print the result as JSON')
    .action(async (options: { olderThan?: string; dryRun?: boolean; json?: boolean }) => {
      const retention = resolveEnvironment().SETTLE_CLAIM_RETENTION || '90d';
      const olderThanMs = parseDuration(options.olderThan ?? retention);
      if (olderThanMs === undefined) {
        throw new CliError(
          options.olderThan
            ? '--older-than must be a duration such as 90d, 36h or 30m'
            : 'SETTLE_CLAIM_RETENTION must be a duration such as 90d, 36h or 30m',
        );
      }
      const result = await withDatabase((pool) =>
        purgeExpiredClaims(pool, olderThanMs, { dryRun: options.dryRun }),
      );
      output(options.json, { ...result, older_than: formatDuration(olderThanMs) }, renderPurge);
    });
}

function renderPurge(r: PurgeResult & { older_than: string }): string {
  return [
    `${r.dryRun ? 'would drop' : 'dropped'} ${r.claims} claims, ${r.events} events and ${r.conflicts} conflict records ` +
      `older than ${r.older_than} (claimed before ${r.cutoff})`,
    ...(r.keptExceptions
      ? [`kept ${r.keptExceptions} open exceptions past the cutoff: see settle exceptions`]
      : []),
  ].join('\n');
}
