import type { Command } from 'commander';
import { registerSearchAttributes, type SearchAttributeRegistration } from '../../app/search-attributes';
import { connectClient } from '../../client';
import { migrate, type MigrationResult } from '../../db/migrate';
import { resolveEnvironment } from '../../stack/dev-state';
import { commandConfig, output, withDatabase } from '../context';

/** How long registering the search attributes may take before Temporal counts as unreachable. */
const TEMPORAL_DEADLINE_MS = 30_000;

type MigrateResult = MigrationResult & {
  /** null when no Temporal is configured (TEMPORAL_ADDRESS unset and no running stack). */
  search_attributes: SearchAttributeRegistration | null;
};

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
    .action(async (options: { json?: boolean }) => {
      const migrations = await withDatabase(migrate);
      const result: MigrateResult = { ...migrations, search_attributes: await registerIfConfigured() };
      output(options.json, result, (r) =>
        [
          r.applied.length
            ? `applied: ${r.applied.join(', ')}`
            : `up to date (${r.alreadyApplied.length} migrations)`,
          r.search_attributes
            ? `search attributes in namespace ${r.search_attributes.namespace}: ${
                r.search_attributes.added.length
                  ? `added ${r.search_attributes.added.join(', ')}`
                  : 'all present'
              }`
            : 'search attributes: not registered (TEMPORAL_ADDRESS is not set)',
        ].join('\n'),
      );
    });
}

async function registerIfConfigured(): Promise<SearchAttributeRegistration | null> {
  if (!resolveEnvironment().TEMPORAL_ADDRESS) return null;
  const { config } = commandConfig();
  const client = await connectClient(config);
  try {
    return await client.connection.withDeadline(Date.now() + TEMPORAL_DEADLINE_MS, () =>
      registerSearchAttributes(client, config.temporalNamespace),
    );
  } finally {
    await client.connection.close().catch(() => {});
  }
}
