import type { Command } from 'commander';
import { DEFAULT_UNRECONCILED_AFTER_MS, EXCEPTION_KINDS } from '../../db/exceptions';
import { formatDuration } from '../../domain/duration';

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
      }) => (await import('../actions/exceptions.js')).listExceptions(options),
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
    .action(async (eventIds: string[], _own: unknown, command: Command) =>
      (await import('../actions/exceptions.js')).resolve(eventIds, _own, command),
    );
}
