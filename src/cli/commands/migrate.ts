import type { Command } from 'commander';

export function registerMigrate(program: Command) {
  program
    .command('migrate')
    .description(
      'Apply database migrations to DATABASE_URL (idempotent; safe from several processes at once), ' +
        "and register settle's search attributes (ShipmentId, PaymentId, PaymentEventType, SettleOutcome, " +
        'SettleDeliveryState) in the Temporal namespace when TEMPORAL_ADDRESS is set (idempotent; needs the ' +
        'operator permission to add search attributes).',
    )
    .option('--json', 'print the result as JSON')
    .action(async (options: { json?: boolean }) =>
      (await import('../actions/migrate.js')).migrateAll(options),
    );
}
