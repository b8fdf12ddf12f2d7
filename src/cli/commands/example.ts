import type { Command } from 'commander';

export function registerExample(program: Command) {
  program
    .command('example')
    .description(
      'Send one signed example payment event to the running gateway (adding its shipment first), ' +
        'then show what it did. Run it twice with --id to see the duplicate path.',
    )
    .option('--id <event-id>', 'event ID to send (default: a new pay_example_… ID)')
    .option('--shipment <id>', 'shipment the payment is for (default: one of its own, SHP-<event suffix>)')
    .option('--type <type>', 'event type', 'payment.settled')
    .option('--json', 'print the response and the inspection as JSON')
    .action(async (options: { id?: string; shipment?: string; type: string; json?: boolean }) =>
      (await import('../actions/example.js')).example(options),
    );
}
