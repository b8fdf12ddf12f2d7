import type { Command } from 'commander';

export function registerInspect(program: Command) {
  program
    .command('inspect')
    .description(
      'Show one event: claim, outcome, payload hash, workflow status, shipment, ledger, deliveries.',
    )
    .argument('<event-id>', "the provider's event ID, e.g. pay_7f3")
    .option('--json', 'print the same JSON as GET /events/<id>')
    .action(async (eventId: string, options: { json?: boolean }) =>
      (await import('../actions/inspect.js')).inspect(eventId, options),
    );
}
