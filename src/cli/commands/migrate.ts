import type { Command } from 'commander';
import type { SearchAttributeRegistration } from '../../temporal/search-attributes';
import type { MigrationResult } from '../../db/migrate';

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
    .action(async (options: { json?: boolean }) => migrateAll(options));
}

// The implementation: what it needs beyond commander is imported when the command runs.

/** How long registering the search attributes may take before Temporal counts as unreachable. */
const TEMPORAL_DEADLINE_MS = 30_000;

type MigrateResult = {
  applied: MigrationResult['applied'];
  already_applied: MigrationResult['alreadyApplied'];
  /** null when no Temporal is configured (no TEMPORAL_ADDRESS, no Temporal profile, no running stack). */
  search_attributes: SearchAttributeRegistration | null;
};

async function migrateAll(options: { json?: boolean }): Promise<void> {
  const [{ migrate }, { output, withDatabase }] = await Promise.all([
    import('../../db/migrate.js'),
    import('../context.js'),
  ]);
  const migrations = await withDatabase(migrate);
  const result: MigrateResult = {
    applied: migrations.applied,
    already_applied: migrations.alreadyApplied,
    search_attributes: await registerIfConfigured(),
  };
  output(options.json, result, (r) =>
    [
      r.applied.length
        ? `applied: ${r.applied.join(', ')}`
        : `up to date (${r.already_applied.length} migrations)`,
      r.search_attributes
        ? `search attributes in namespace ${r.search_attributes.namespace}: ${
            r.search_attributes.added.length ? `added ${r.search_attributes.added.join(', ')}` : 'all present'
          }`
        : 'search attributes: not registered (no Temporal configured: TEMPORAL_ADDRESS or a profile)',
    ].join('\n'),
  );
}

async function registerIfConfigured(): Promise<SearchAttributeRegistration | null> {
  const [{ registerSearchAttributes }, { connectClient }, { resolveEnvironment }, { commandConfig }] =
    await Promise.all([
      import('../../temporal/search-attributes.js'),
      import('../../client.js'),
      import('../../config/dev-state.js'),
      import('../context.js'),
    ]);
  const env = resolveEnvironment();
  if (!env.TEMPORAL_ADDRESS && !env.TEMPORAL_PROFILE && !env.TEMPORAL_CONFIG_FILE) return null;
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
