import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import type { Config } from '../../config';
import { formatDuration, parseDuration } from '../../domain/duration';
import { CliError } from '../errors';

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
      purge(options),
    );
}

// The implementation: what it needs beyond commander is imported when the command runs.

async function purge(options: {
  olderThan?: string;
  dryRun?: boolean;
  force?: boolean;
  json?: boolean;
}): Promise<void> {
  const [{ purgeExpiredClaims }, { commandConfig, output, withServices }] = await Promise.all([
    import('../../db/purge.js'),
    import('../context.js'),
  ]);
  const olderThanMs = options.olderThan
    ? parseDuration(options.olderThan)
    : commandConfig().config.claimRetentionMs;
  if (olderThanMs === undefined)
    throw new CliError('--older-than must be a duration such as 90d, 36h or 30m');
  const result = await withServices(async ({ pool, client, config }) => {
    if (!options.dryRun && !options.force) await refuseShortRetention(client, config, olderThanMs);
    return purgeExpiredClaims(pool, olderThanMs, { dryRun: options.dryRun });
  });
  output(
    options.json,
    {
      cutoff: result.cutoff,
      older_than: formatDuration(olderThanMs),
      claims: result.claims,
      events: result.events,
      conflicts: result.conflicts,
      provider_exceptions: result.providerExceptions,
      kept_exceptions: result.keptExceptions,
      dry_run: result.dryRun,
    },
    renderPurge,
  );
}

/**
 * A claim must outlive Temporal's memory of the workflow ID: purged sooner, a redelivered event finds
 * neither and takes effect again. The operator can insist (--force), knowing that.
 */
async function refuseShortRetention(client: Client, config: Config, olderThanMs: number): Promise<void> {
  const { checkRetention } = await import('../../temporal/purge-schedule.js');
  let check: Awaited<ReturnType<typeof checkRetention>>;
  try {
    check = await client.connection.withDeadline(Date.now() + 10_000, () =>
      checkRetention(client, { temporalNamespace: config.temporalNamespace, claimRetentionMs: olderThanMs }),
    );
  } catch (error) {
    throw new CliError(
      `cannot read the retention of Temporal namespace ${config.temporalNamespace} ` +
        `(${error instanceof Error ? error.message : String(error)}); nothing was purged. ` +
        'Retry when Temporal answers, or pass --force.',
    );
  }
  if (!check.ok) {
    throw new CliError(
      `refusing to purge claims older than ${formatDuration(olderThanMs)}: that is not longer than the ` +
        `Temporal namespace ${config.temporalNamespace}'s retention (${formatDuration(check.namespaceRetentionMs ?? 0)}), ` +
        'so a redelivered event could find neither its claim nor its workflow ID and take effect twice. ' +
        'Nothing was purged. Use a longer --older-than, or --force if you accept that.',
    );
  }
}

type PurgeOutput = {
  cutoff: string;
  older_than: string;
  claims: number;
  events: number;
  conflicts: number;
  provider_exceptions: number;
  kept_exceptions: number;
  dry_run: boolean;
};

function renderPurge(r: PurgeOutput): string {
  return [
    `${r.dry_run ? 'would drop' : 'dropped'} ${r.claims} claims, ${r.events} events, ${r.conflicts} conflict records ` +
      `and ${r.provider_exceptions} provider exceptions ` +
      `older than ${r.older_than} (claimed before ${r.cutoff})`,
    ...(r.kept_exceptions
      ? [`kept ${r.kept_exceptions} open exceptions past the cutoff: see settle exceptions`]
      : []),
  ].join('\n');
}
