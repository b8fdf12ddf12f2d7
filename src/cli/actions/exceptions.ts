import { userInfo } from 'node:os';
import type { Command } from 'commander';
import {
  DEFAULT_UNRECONCILED_AFTER_MS,
  NEXT_STEP,
  openExceptions,
  resolveExceptions,
  type ExceptionList,
  type ResolveResult,
} from '../../app/exceptions';
import { EXCEPTION_KINDS, type ExceptionKind } from '../../db/exceptions';
import { parseDuration } from '../../domain/duration';
import { loadSettings } from '../../config';
import { CliError, output, withServices } from '../context';

export async function listExceptions(options: {
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
  output(options.json, { ...list, count: list.exceptions.length }, renderExceptions);
}

export async function resolve(eventIds: string[], _own: unknown, command: Command): Promise<void> {
  // `--json` is also the parent's option, which commander gives to `exceptions` itself.
  const options = command.optsWithGlobals<{ note: string; by?: string; json?: boolean }>();
  const note = options.note.trim();
  if (!note) throw new CliError('--note must say what was done');
  const resolvedBy = options.by?.trim() || operatorName();
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

function operatorName(): string {
  try {
    return userInfo().username;
  } catch {
    return loadSettings().user ?? 'unknown';
  }
}

function renderExceptions(list: ExceptionList): string {
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
    ? ['', 'Next steps:', ...kinds.map((kind) => `  ${kind}: ${NEXT_STEP[kind]}`)]
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
