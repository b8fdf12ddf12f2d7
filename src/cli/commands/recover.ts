import type { Command } from 'commander';
import type { RecoverySummary } from '../../app/recovery-missed-events';
import type { Config } from '../../config';
import { parseDuration } from '../../domain/duration';
import { onShutdown, stopping } from '../../lib/shutdown';
import type { ProviderConfigOf, ProviderModule, ProviderVariables } from '../../providers/module';
import type { RecoverySource } from '../../providers/recovery-source';
import { CliError } from '../errors';

export function registerRecover(program: Command) {
  program
    .command('recover')
    .description(
      "List a provider's events and admit every one settle never received, through the same path as its " +
        'webhook: an event already admitted is a duplicate and changes nothing. Without --since it lists from ' +
        "the recovery sweep's durable cursor (what the Schedule does every SETTLE_<PROVIDER>_SWEEP_EVERY). " +
        'Each provider with an events API needs its API credentials (docs/providers.md names them). ' +
        'SETTLE_PROVIDER_MODE applies to every listed event. Ctrl-C stops between events and prints the summary.',
    )
    .requiredOption('--provider <name>', 'a provider with an events API (docs/providers.md)')
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
      }) => recover(options),
    );
}

// The implementation: what it needs beyond commander is imported when the command runs.

/** With stderr not a terminal, a progress line at least this often. */
const PROGRESS_LINE_MS = 10_000;

/** Exit codes: a fault that a rerun can get past (EX_TEMPFAIL), a key to fix (EX_CONFIG), refusals. */
const EXIT = { interrupted: 130, retryLater: 75, configuration: 78, refused: 2 } as const;

/** Provider faults (429, 5xx, timeouts) waited out before the run stops with 75. */
const DEFAULT_MAX_RETRIES = 10;

async function recover(options: {
  provider: string;
  since?: string;
  dryRun?: boolean;
  json?: boolean;
  maxRetries?: string;
}): Promise<void> {
  const { PROVIDERS, RECOVERY_PROVIDER_NAMES } = await import('../../providers/registry.js');
  const provider = RECOVERY_PROVIDER_NAMES.find((name) => name === options.provider);
  if (provider === undefined) {
    throw new CliError(
      `--provider must be ${RECOVERY_PROVIDER_NAMES.join(' or ')}: the providers with an events API ` +
        '(docs/providers.md: import the others’ reports with settle import --provider)',
    );
  }
  const module: ProviderModule = PROVIDERS[provider];
  const maxRetries = options.maxRetries === undefined ? DEFAULT_MAX_RETRIES : Number(options.maxRetries);
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 100) {
    throw new CliError('--max-retries must be a whole number from 0 to 100');
  }
  const sinceMs = options.since === undefined ? undefined : parseDuration(options.since);
  if (sinceMs === undefined && options.since !== undefined) {
    throw new CliError('--since must be a duration such as 72h or 7d');
  }
  const [
    { SingleBar },
    { recoverMissedEvents, summaryOfFault },
    { RecoveryFault },
    { output, withServices },
  ] = await Promise.all([
    import('cli-progress'),
    import('../../app/recovery-missed-events.js'),
    import('../../providers/recovery-source.js'),
    import('../context.js'),
  ]);
  // Ctrl-C or SIGTERM (lib/shutdown.ts) stops between events; the summary is still printed.
  let recovered!: () => void;
  const recoveryDone = new Promise<void>((resolve) => (recovered = resolve));
  const off = onShutdown('recover (the event being admitted)', () => recoveryDone);

  const bar = new SingleBar({
    stream: process.stderr,
    format:
      'recover |{bar}| {percentage}% of the window | listed {listed} | already had {already_had} | ' +
      'admitted {admitted} | refused {refused} | {rate}/s',
    barsize: 30,
    hideCursor: true,
  });
  const plain = !process.stderr.isTTY;
  const started = Date.now();
  let last: RecoverySummary | undefined;
  let lastLineAt = 0;
  const progressLine = () => {
    if (!last) return;
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    process.stderr.write(
      `recover: listed ${last.listed} already had ${last.already_had} admitted ${last.admitted} ` +
        `refused ${last.refused} ${Math.round(last.listed / seconds)}/s elapsed ${Math.round(seconds)}s\n`,
    );
    lastLineAt = Date.now();
  };
  const ticker = plain ? setInterval(progressLine, PROGRESS_LINE_MS) : undefined;
  let barStarted = false;
  try {
    const result = await withServices(async ({ pool, client, config }) => {
      const source = recoverySource(module, config);
      const since = sinceMs === undefined ? undefined : new Date(Date.now() - sinceMs);
      try {
        return {
          summary: await recoverMissedEvents({ pool, client, taskQueue: config.taskQueue }, source, {
            since,
            dryRun: options.dryRun,
            signal: stopping,
            providerMode: config.providerMode,
            retry: {
              attempts: maxRetries,
              onRetry: (fault, delayMs, attempt) => {
                if (barStarted) bar.stop();
                barStarted = false;
                process.stderr.write(
                  `recover: ${fault.message}; waiting ${(delayMs / 1000).toFixed(1)} s, retry ${attempt} of ${maxRetries}\n`,
                );
              },
            },
            onProgress: (summary, at) => {
              last = summary;
              if (plain) {
                if (!lastLineAt) progressLine();
                return;
              }
              // The bar runs over the window's time, the one measure known before the listing ends.
              const from = Date.parse(
                'since' in summary.from ? summary.from.since : summary.from.after_created_at,
              );
              const payload = {
                listed: summary.listed,
                already_had: summary.already_had,
                admitted: summary.admitted,
                refused: summary.refused,
                rate: Math.round(summary.listed / Math.max((Date.now() - started) / 1000, 0.001)),
              };
              const total = Math.max(1, Math.round((Date.now() - from) / 1000));
              if (!barStarted) {
                barStarted = true;
                bar.start(total, 0, payload);
              }
              bar.update(Math.min(total, Math.max(0, Math.round((at.getTime() - from) / 1000))), payload);
            },
          }),
          fault: undefined,
        };
      } catch (error) {
        if (!(error instanceof RecoveryFault)) throw error;
        return { summary: summaryOfFault(error), fault: error };
      }
    });
    bar.stop();
    if (plain) progressLine();
    if (result.summary)
      output(options.json, { ...result.summary, error: result.fault?.message ?? null }, render);
    if (result.fault) {
      process.stderr.write(`settle recover: ${result.fault.message}\n`);
      process.exitCode =
        result.fault.kind === 'unauthorized' || result.fault.kind === 'refused'
          ? EXIT.configuration
          : EXIT.retryLater;
    } else if (result.summary?.interrupted) {
      process.exitCode = EXIT.interrupted;
    } else if (result.summary?.refused) {
      process.exitCode = EXIT.refused;
    }
  } finally {
    clearInterval(ticker);
    bar.stop();
    recovered();
    off();
  }
}

/** The provider's recovery source, or a CliError naming the variables it needs. */
function recoverySource(module: ProviderModule, config: Config): RecoverySource {
  const recovery = module.recovery!;
  const providerConfig = config as unknown as ProviderConfigOf<ProviderVariables>;
  if (!recovery.on(providerConfig)) {
    throw new CliError(
      `${recovery.credentials} is not set: settle recover lists ${module.label}'s events with it`,
    );
  }
  return recovery.source(providerConfig);
}

function render(s: RecoverySummary & { error: string | null }): string {
  const from =
    'since' in s.from ? `created since ${s.from.since}` : `after the cursor (${s.from.after_created_at})`;
  const lines = [
    `${s.provider}${s.dry_run ? ' (dry run: nothing admitted, recorded or moved)' : ''}: events ${from}, ` +
      `${(s.elapsed_ms / 1000).toFixed(1)} s, ${s.events_per_second}/s${s.interrupted ? ' (interrupted)' : ''}`,
    `  listed        ${s.listed}`,
    `  already had   ${s.already_had}   (admitted before: delivered, imported or recovered)`,
    `  ${s.dry_run ? 'would admit' : 'admitted now'}  ${s.admitted}   (never delivered: each one run)`,
    `  ignored       ${s.ignored}`,
    `  refused       ${s.refused}${s.dry_run || !s.refused ? '' : '   (each in settle exceptions, with its next step)'}`,
    ...s.refusals.map((r) => `    ${r.event_id ?? '(no event ID)'}: ${r.reason}: ${r.message}`),
    `  retries       ${s.retries.used} of at most ${s.retries.limit}   (429 after Retry-After, 5xx and timeouts with backoff)`,
    `  cursor        ${s.cursor ? `${s.cursor.created_at} (${s.cursor.event_id})` : 'none yet'}${
      s.cursor_moved ? ' (moved)' : ''
    }`,
  ];
  if (s.error)
    lines.push('', `Stopped: ${s.error}`, 'Run the same command again to continue from the cursor.');
  return lines.join('\n');
}
