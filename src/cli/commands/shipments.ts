import type { Command } from 'commander';

export function registerShipments(program: Command) {
  const shipments = program
    .command('shipments')
    .description('Load shipment records; a new shipment starts with payment status `pending`.');

  shipments
    .command('add')
    .description('Add one or more shipments by ID (existing ones are left unchanged).')
    .argument('<id...>', 'shipment IDs, e.g. SHP-4821')
    .option(
      '--amount <amount>',
      'the amount each shipment expects to be paid, in major units (42.00); a payment of another amount is needs_review',
    )
    .option('--currency <code>', 'the ISO 4217 currency it expects (EUR); required with --amount')
    .option('--json', 'print the result as JSON')
    .action(async (ids: string[], options: { json?: boolean; amount?: string; currency?: string }) =>
      (await import('../actions/shipments.js')).add(ids, options),
    );

  shipments
    .command('import')
    .description(
      'Add shipments from a file: CSV with a `shipment_id` column, or JSONL with a `shipment_id` field; ' +
        'optional `amount` (major units, 42.00) and `currency` (EUR) columns or fields name what each expects to be paid.',
    )
    .argument('<file>', 'path to a .csv or .jsonl file')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, options: { json?: boolean }) =>
      (await import('../actions/shipments.js')).importFile(file, options),
    );
}
