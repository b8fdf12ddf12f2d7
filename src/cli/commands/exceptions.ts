import { userInfo } from 'node:os';
import type { Command } from 'commander';
import type { ExceptionList, ResolveResult } from '../../app/exceptions';
import { DEFAULT_UNRECONCILED_AFTER_MS, EXCEPTION_KINDS, type ExceptionKind } from '../../db/exceptions';
import { formatDuration, parseDuration } from '../../domain/duration';
import { CliError } from '../errors';

export function registerExceptions(program: Command) {
  const exceptions = program
    .command('exceptions')
    .description(
      'List the events that need an operator: unmatched (no shipment), conflict (ID reused with another ' +
        'payload, refused with 409), failed (a delivery failed, or no claim long after receipt), needs_review ' +
        '(compensated), delivery_stuck (retrying longer than the threshold of the deployment: SETTLE_DELIVERY_STUCK_AFTER of the last gateway started), not_configured ' +
        '(no target URL), delivery_abandoned (left pending by a cancelled or terminated run) and ' +
        'unadmitted_run (a run settle did not start: refused, terminated and replaced, or failed on its ' +
        'input; without effect), each with ' +
        'its next step. `settle exceptions resolve` closes them.',
    )
    .option('--kind <kind...>', `only these kinds: ${EXCEPTION_KINDS.join(', ')}`)
    .option(
      '--unreconciled-after <duration>',
      'an event without a claim this long after receipt has failed',
      formatDuration(DEFAULT_UNRECONCILED_AFTER_MS),
    )
    .option('--all', 'also list the exceptions already resolved, with who resolved them, when and why')
    .option('--limit <n>', 'at most this many rows, oldest first', '500')
    .option('--json', 'print the rows as JSON')
    .action(
      async (options: {
        kind?: string[];
        unreconciledAfter: string;
        all?: boolean;
        limit: string;
        json?: boolean;
      }) => listExceptions(options),
    );

  exceptions
    .command('resolve')
    .description(
      'Close every open exception of these events once they are handled (settled by hand, the provider ' +
        'asked, the delivery made another way). Audited: who (--by, or the OS user), when, and the note. ' +
        'Resolved exceptions leave `settle exceptions`, `settle stats` and settle_open_exceptions; ' +
        '`settle exceptions --all` still lists them. A later exception of the same event is open again.',
    )
    .argument('<event-id...>', "the provider's event IDs")
    .requiredOption('--note <text>', 'what was done, for the audit trail')
    .option('--by <name>', 'who resolved them (default: the OS user)')
    .option('--json', 'print the result as JSON')
    .action(async (eventIds: string[], _own: unknown, command: Command) => resolve(eventIds, _own, command));
}

// The implementation: what it needs beyond commander is imported when the command runs.

async function listExceptions(options: {
  kind?: string[];
  unreconciledAfter: string;
  all?: boolean;
  limit: string;
  json?: boolean;
}): Promise<void> {
  const kinds = (options.kind ?? []) as ExceptionKind[];
  const unknown = kinds.filter((kind) => !EXCEPTION_KINDS.includes(kind));
  if (unknown.length)
    throw new CliError(`unknown kind ${unknown.join(', ')}; use ${EXCEPTION_KINDS.join(', ')}`);
  const unreconciledAfterMs = parseDuration(options.unreconciledAfter);
  if (unreconciledAfterMs === undefined)
    throw new CliError('--unreconciled-after must be a duration such as 15m');
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new CliError('--limit must be a positive integer');

  const [{ NEXT_STEP, openExceptions }, { output, withServices }] = await Promise.all([
    import('../../app/exceptions.js'),
    import('../context.js'),
  ]);
  const list = await withServices(({ pool, client, config }) =>
    openExceptions(
      { pool, client },
      {
        kinds,
        unreconciledAfterMs,
        stuckAfterMs: config.deliveryStuckAfterMs,
        includeResolved: options.all,
        limit,
      },
    ),
  );
  output(options.json, { ...list, count: list.exceptions.length }, (view) =>
    renderExceptions(view, NEXT_STEP),
  );
}

async function resolve(eventIds: string[], _own: unknown, command: Command): Promise<void> {
  // `--json` is also the parent's option, which commander gives to `exceptions` itself.
  const options = command.optsWithGlobals<{ note: string; by?: string; json?: boolean }>();
  const note = options.note.trim();
  if (!note) throw new CliError('--note must say what was done');
  const [{ resolveExceptions }, { output, withServices }] = await Promise.all([
    import('../../app/exceptions.js'),
    import('../context.js'),
  ]);
  const resolvedBy = options.by?.trim() || (await operatorName());
  const result = await withServices(({ pool, client, config }) =>
    resolveExceptions(
      { pool, client },
      eventIds,
      { resolvedBy, note },
      {
        unreconciledAfterMs: DEFAULT_UNRECONCILED_AFTER_MS,
        stuckAfterMs: config.deliveryStuckAfterMs,
      },
    ),
  );
  output(options.json, result, renderResolved);
  if (result.nothing_open.length) process.exitCode = 4;
}

async function operatorName(): Promise<string> {
  try {
    return userInfo().username;
  } catch {
    const { loadSettings } = await import('../../config/index.js');
    return loadSettings().user ?? 'unknown';
  }
}

function renderExceptions(list: ExceptionList, nextStep: Record<ExceptionKind, string>): string {
  const rows = list.exceptions;
  const warning = list.runs_checked
    ? []
    : ['', 'Temporal did not answer: deliveries left by a cancelled or terminated run may be missing.'];
  if (!rows.length) return ['no exceptions', ...warning].join('\n');
  const lines = rows.map((row) =>
    [
      `${row.kind.padEnd(18)} ${row.event_id.padEnd(28)} since ${row.since}  ${row.shipment_id ?? '-'}  ${row.detail}`,
      ...(row.resolution
        ? [
            `${''.padEnd(19)}resolved ${row.resolution.resolved_at} by ${row.resolution.resolved_by}: ${row.resolution.note}`,
          ]
        : []),
    ].join('\n'),
  );
  const kinds = [...new Set(rows.filter((row) => !row.resolution).map((row) => row.kind))];
  const steps = kinds.length
    ? ['', 'Next steps:', ...kinds.map((kind) => `  ${kind}: ${nextStep[kind]}`)]
    : [];
  return [...lines, ...steps, ...warning].join('\n');
}

function renderResolved(result: ResolveResult): string {
  const lines = result.resolved.map(
    (row) => `resolved ${row.kind} ${row.event_id} at ${row.resolved_at} by ${row.resolved_by}`,
  );
  for (const id of result.nothing_open) lines.push(`nothing open for ${id}; nothing recorded`);
  return lines.join('\n');
}
