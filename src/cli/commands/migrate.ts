import type { Command } from 'commander';
import type { SearchAttributeRegistration } from '../../temporal/search-attribute-registration';
import type { MigrationResult, MigrationStatus } from '../../db/migrate';

export function registerMigrate(program: Command) {
  program
    .command('migrate')
    .description(
      'Apply database migrations to DATABASE_URL (idempotent; safe from several processes at once), ' +
        "and register settle's search attributes (ShipmentId, PaymentId, PaymentEventType, SettleOutcome, " +
        'SettleDeliveryState) in the Temporal namespace when TEMPORAL_ADDRESS is set (idempotent; needs the ' +
        'operator permission to add search attributes).',
    )
    .addHelpText(
      'after',
      [
        '',
        'Expand, then contract: on a database settle already runs on, `settle migrate` applies only',
        "what the previous release's processes keep working on (expand) and holds back the contract",
        'migrations; run `settle migrate --contract` once no process of the previous release remains',
        '(docs/deployment.md, "Upgrades"). A database no release has migrated gets everything at once.',
      ].join('\n'),
    )
    .option(
      '--contract',
      'also apply the contract migrations: only once no process of the previous release runs',
    )
    .option(
      '--status',
      'print what is applied, what `settle migrate` and what `--contract` would apply; change nothing',
    )
    .option('--json', 'print the result as JSON')
    .action(async (options: MigrateOptions) => (options.status ? printStatus(options) : migrateAll(options)));
}

type MigrateOptions = { json?: boolean; contract?: boolean; status?: boolean };

// The implementation: what it needs beyond commander is imported when the command runs.

/** How long registering the search attributes may take before Temporal counts as unreachable. */
const TEMPORAL_DEADLINE_MS = 30_000;

type MigrateResult = {
  applied: MigrationResult['applied'];
  already_applied: MigrationResult['alreadyApplied'];
  /** Contract migrations held back until `settle migrate --contract`. */
  held_back: MigrationResult['heldBack'];
  /** null when no Temporal is configured (no TEMPORAL_ADDRESS, no Temporal profile, no running stack). */
  search_attributes: SearchAttributeRegistration | null;
};

async function migrateAll(options: MigrateOptions): Promise<void> {
  const [{ migrate }, { output, withDatabase }] = await Promise.all([
    import('../../db/migrate.js'),
    import('../context.js'),
  ]);
  const migrations = await withDatabase((pool) => migrate(pool, { contract: options.contract }));
  const result: MigrateResult = {
    applied: migrations.applied,
    already_applied: migrations.alreadyApplied,
    held_back: migrations.heldBack,
    search_attributes: await registerIfConfigured(),
  };
  output(options.json, result, (r) =>
    [
      r.applied.length
        ? `applied: ${r.applied.join(', ')}`
        : `up to date (${r.already_applied.length} migrations)`,
      ...(r.held_back.length
        ? [
            `held back until \`settle migrate --contract\` (once no process of the previous release runs): ${r.held_back.join(', ')}`,
          ]
        : []),
      r.search_attributes
        ? `search attributes in namespace ${r.search_attributes.namespace}: ${
            r.search_attributes.added.length ? `added ${r.search_attributes.added.join(', ')}` : 'all present'
          }`
        : 'search attributes: not registered (no Temporal configured: TEMPORAL_ADDRESS or a profile)',
    ].join('\n'),
  );
}

async function printStatus(options: MigrateOptions): Promise<void> {
  const [{ migrationStatus }, { output, withDatabase }] = await Promise.all([
    import('../../db/migrate.js'),
    import('../context.js'),
  ]);
  const status: MigrationStatus = await withDatabase(migrationStatus);
  output(options.json, status, (s) =>
    [
      `applied: ${s.applied.length} migrations${s.applied.length ? ` (last ${s.applied.at(-1)})` : ''}`,
      s.pending.length
        ? `pending (settle migrate): ${s.pending.join(', ')}`
        : 'pending (settle migrate): none',
      s.contract.length
        ? [
            `pending contract (settle migrate --contract, once no process of the previous release runs):`,
            ...s.contract.map((c) => `  ${c.name}: ${c.breaks}`),
          ].join('\n')
        : 'pending contract: none',
    ].join('\n'),
  );
}

async function registerIfConfigured(): Promise<SearchAttributeRegistration | null> {
  const [{ registerSearchAttributes }, { connectClient }, { resolveEnvironment }, { commandConfig }] =
    await Promise.all([
      import('../../temporal/search-attribute-registration.js'),
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
