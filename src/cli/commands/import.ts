import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { ImportCounts, ImportSummary } from '../../app/import';
import { DEFAULT_MAX_BACKLOG } from '../../app/import-pace';
import { targetLimitsConfig } from '../../domain/target-limits';
import { onShutdown, stopping } from '../../lib/shutdown';
import { CliError } from '../errors';

export function registerImport(program: Command) {
  program
    .command('import')
    .description(
      "Feed a provider's event report (one JSON event per line) through the same path as the webhook. " +
        'Events already known count as duplicates, so rerunning after an interrupted or partial run ' +
        'applies only what is missing. Runs start no faster than the tightest SETTLE_<TARGET>_RATE_LIMIT ' +
        "takes calls: run it with the workers' environment. Ctrl-C stops reading, lets lines in flight finish " +
        'and prints the summary.',
    )
    .argument('<file.jsonl>', 'the report: one event per line, as the provider sends them')
    .option(
      '--provider <name>',
      "a provider's name (docs/providers.md): the file is that provider's own export, one event a line, " +
        'read through the same adapter as its /webhooks/<name> route; under SETTLE_PROVIDER_MODE an event of ' +
        'the other mode is ignored',
    )
    .option('--concurrency <n>', 'lines in flight at once', parseCount, 4)
    .option(
      '--max-backlog <n>',
      'imported runs started but not yet reconciled before the import waits for the workers to catch up ' +
        '(they run on the bulk task queue, <queue>-bulk), so that an import never floods Temporal ahead of ' +
        'live traffic; 0 never waits, for the workers nor for the limited targets',
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
      ) => importReportFile(file, options),
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

// The implementation: what it needs beyond commander is imported when the command runs.

/** With stderr not a terminal, a progress line at least this often. */
const PROGRESS_LINE_MS = 10_000;

async function importReportFile(
  file: string,
  options: { concurrency: number; maxBacklog: number; json?: boolean; provider?: string },
): Promise<void> {
  const provider = options.provider === undefined ? undefined : await providerOf(options.provider);
  if (!existsSync(file)) throw new CliError(`cannot read ${file}`);
  const [{ SingleBar }, { importReport }, { output, withServices }] = await Promise.all([
    import('cli-progress'),
    import('../../app/import.js'),
    import('../context.js'),
  ]);
  // Ctrl-C or SIGTERM (lib/shutdown.ts) stops reading; the lines in flight finish (Ctrl-C again quits now).
  let imported!: () => void;
  const importDone = new Promise<void>((resolve) => (imported = resolve));
  const off = onShutdown('import (lines in flight)', () => importDone);

  const bar = new SingleBar({
    stream: process.stderr,
    format:
      'import |{bar}| {percentage}% {value}/{total} lines | {rate}/s | ETA {eta_formatted} | ' +
      'accepted {accepted} duplicate {duplicate} rejected {rejected}',
    barsize: 30,
    etaBuffer: 200,
    hideCursor: true,
  });
  const started = Date.now();
  let barStarted = false;
  // Without a terminal (cron, CI) a bar is noise: plain lines instead, the first at once, then one at
  // least every PROGRESS_LINE_MS, and the last when the run ends. Their format is in docs/operations.md.
  const plain = !process.stderr.isTTY;
  let lastLineAt = 0;
  let last: { processed: number; total: number; counts: ImportCounts } | undefined;
  const progressLine = () => {
    if (!last) return;
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    const percent = last.total ? Math.floor((last.processed / last.total) * 100) : 100;
    process.stderr.write(
      `import: ${last.processed}/${last.total} lines (${percent}%) ${Math.round(last.processed / seconds)}/s ` +
        `accepted ${last.counts.accepted} duplicate ${last.counts.duplicate} ignored ${last.counts.ignored} ` +
        `rejected ${last.counts.rejected} elapsed ${Math.round(seconds)}s\n`,
    );
    lastLineAt = Date.now();
  };
  const ticker = plain ? setInterval(progressLine, PROGRESS_LINE_MS) : undefined;
  try {
    const summary = await withServices(({ pool, client, config }) =>
      importReport({ pool, client, taskQueue: config.taskQueue }, file, {
        concurrency: options.concurrency,
        maxBacklog: options.maxBacklog,
        targetLimits: targetLimitsConfig(config),
        signal: stopping,
        provider,
        providerMode: config.providerMode,
        onProgress: (processed, total, counts) => {
          if (plain) {
            last = { processed, total, counts };
            if (!lastLineAt) progressLine();
            return;
          }
          const seconds = Math.max((Date.now() - started) / 1000, 0.001);
          const payload = { ...counts, rate: Math.round(processed / seconds) };
          if (!barStarted) {
            barStarted = true;
            bar.start(total, 0, payload);
          }
          bar.update(processed, payload);
        },
      }),
    );
    bar.stop();
    if (plain) progressLine();
    output(options.json, summary, renderSummary);
    process.exitCode = summary.interrupted
      ? 130
      : summary.unavailable.length
        ? 75
        : summary.rejected.length
          ? 2
          : 0;
  } finally {
    clearInterval(ticker);
    bar.stop();
    imported();
    off();
  }
}

function renderSummary(s: ImportSummary): string {
  const lines = [
    `${s.file}: ${s.processed} of ${s.lines} lines in ${(s.elapsed_ms / 1000).toFixed(1)} s${s.interrupted ? ' (interrupted)' : ''}`,
    `  accepted   ${s.counts.accepted}`,
    `  duplicate  ${s.counts.duplicate}   (already known: applied before, or by an earlier run)`,
    `  ignored    ${s.counts.ignored}   (types settle does not handle, or of the other SETTLE_PROVIDER_MODE)`,
    `  rejected   ${s.counts.rejected}`,
    ...s.rejected.map(
      (p) => `    line ${p.line}${p.event_id ? ` (${p.event_id})` : ''}: ${p.error}: ${p.message}`,
    ),
  ];
  if (s.unavailable.length) {
    lines.push(
      `  unavailable ${s.unavailable.length}: ${s.unavailable[0]!.message}; lines ${s.unavailable
        .slice(0, 20)
        .map((p) => p.line)
        .join(', ')}${s.unavailable.length > 20 ? ', …' : ''}`,
    );
  }
  if (s.interrupted || s.unavailable.length)
    lines.push('', `Run the same command again to apply what is missing.`);
  return lines.join('\n');
}

/** `--provider <name>`: a name in the providers' table, or a CliError listing them. */
async function providerOf(name: string) {
  const { isProviderName, PROVIDER_NAMES } = await import('../../providers/registry.js');
  if (!isProviderName(name)) throw new CliError(`--provider must be one of ${PROVIDER_NAMES.join(', ')}`);
  return name;
}
