import type { Command } from 'commander';
import { EXCEPTION_KINDS, listExceptions, type ExceptionKind, type ExceptionRow } from '../../db/exceptions';
import { parseDuration } from '../../domain/duration';
import { CliError, output, withDatabase } from '../context';

const NEXT_STEP: Record<ExceptionKind, string> = {
  unmatched: 'add the shipment (settle shipments add <id>), then settle replay <event id>',
  conflict: 'the provider reused an ID with another payload; the original stands: ask the provider',
  failed: 'settle inspect <event id>; fix the cause, then settle replay <event id>',
  needs_review: 'a compensation ran: settle inspect <event id> and settle the case by hand',
};

export function registerExceptions(program: Command) {
  program
    .command('exceptions')
    .description(
      'List the events that need an operator: unmatched (no shipment), conflicting (ID reused with another ' +
        'payload, refused with 409), failed (a delivery failed, or no claim long after receipt) and needs_review.',
    )
    .option('--kind <kind...>', `only these kinds: ${EXCEPTION_KINDS.join(', ')}`)
    .option(
      '--unreconciled-after <duration>',
      'an event without a claim this long after receipt has failed',
      '15m',
    )
    .option('--limit <n>', 'at most this many rows, oldest first', '500')
    .option('--json', 'print the rows as JSON')
    .action(
      async (options: { kind?: string[]; unreconciledAfter: string; limit: string; json?: boolean }) => {
        const kinds = (options.kind ?? []) as ExceptionKind[];
        const unknown = kinds.filter((kind) => !EXCEPTION_KINDS.includes(kind));
        if (unknown.length)
          throw new CliError(`unknown kind ${unknown.join(', ')}; use ${EXCEPTION_KINDS.join(', ')}`);
        const unreconciledAfterMs = parseDuration(options.unreconciledAfter);
        if (unreconciledAfterMs === undefined)
          throw new CliError('--unreconciled-after must be a duration such as 15m');
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1) throw new CliError('--limit must be a positive integer');

        const rows = await withDatabase((pool) =>
          listExceptions(pool, { kinds, unreconciledAfterMs, limit }),
        );
        output(options.json, { exceptions: rows, count: rows.length }, (r) => renderExceptions(r.exceptions));
      },
    );
}

function renderExceptions(rows: ExceptionRow[]): string {
  if (!rows.length) return 'no exceptions';
  const lines = rows.map(
    (row) =>
      `${row.kind.padEnd(13)} ${row.event_id.padEnd(28)} since ${row.since}  ${row.shipment_id ?? '-'}  ${row.detail}`,
  );
  const kinds = [...new Set(rows.map((row) => row.kind))];
  return [...lines, '', 'Next steps:', ...kinds.map((kind) => `  ${kind}: ${NEXT_STEP[kind]}`)].join('\n');
}
