import type { Command } from 'commander';
import { replayEvent } from '../../replay';
import { CliError, output, withServices } from '../context';

export function registerReplay(program: Command) {
  program
    .command('replay')
    .description(
      'Push one stored event through the path again. An applied claim makes it a no-op; an unmatched ' +
        'event is applied now if its shipment exists. Never replays anything else.',
    )
    .argument('<event-id>', "the provider's event ID")
    .option('--json', 'print the result as JSON')
    .action(async (eventId: string, options: { json?: boolean }) => {
      const result = await withServices(({ pool, client, config }) =>
        replayEvent({ pool, client, taskQueue: config.taskQueue }, eventId),
      );
      if (result.status === 'not_found') {
        if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
        throw new CliError(`no stored event ${eventId}; nothing was replayed`, 4);
      }
      output(options.json, result, (r) =>
        r.changed
          ? `replayed ${eventId}: ${r.before ?? 'not reconciled'} → ${r.after}`
          : `replayed ${eventId}: no-op, the claim already says ${r.after}`,
      );
    });
}
