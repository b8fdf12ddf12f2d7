import type { Command } from 'commander';
import { formatDuration } from '../../domain/duration';

const DEFAULT_WAIT_MS = 2 * 60_000;

export function registerReplay(program: Command) {
  program
    .command('replay')
    .description(
      'Push stored events through the path again. The claim decides: an applied event changes nothing ' +
        '(its pending deliveries, e.g. after a cancelled run, are sent again), an unmatched one is applied ' +
        'now if its shipment exists. Returns once each reconcile has decided and says what happened: the ' +
        'claim before and after, and each delivery started, in flight or already settled; --wait also ' +
        'waits for the deliveries. Safe to interrupt and rerun. Exit codes: 0 done, 4 an event is unknown, ' +
        '75 a reconcile did not decide (or, with --wait, a delivery was still pending) in time, 2 with ' +
        '--wait a delivery ended undelivered, 130 interrupted.',
    )
    .argument('[event-id...]', "the provider's event IDs")
    .option('--unmatched', 'replay every unmatched event whose shipment now exists, with progress')
    .option('--wait', 'also wait until no delivery of the event is pending')
    .option('--timeout <duration>', 'how long --wait waits', formatDuration(DEFAULT_WAIT_MS))
    .option('--json', 'print the results as JSON')
    .action(
      async (
        eventIds: string[],
        options: { unmatched?: boolean; wait?: boolean; timeout: string; json?: boolean },
      ) => (await import('../actions/replay.js')).replay(eventIds, options),
    );
}
