import { registerSearchAttributes, type SearchAttributeRegistration } from '../../app/search-attributes';
import { connectClient } from '../../client';
import { migrate, type MigrationResult } from '../../db/migrate';
import { resolveEnvironment } from '../../lib/dev-state';
import { commandConfig, output, withDatabase } from '../context';

/** How long registering the search attributes may take before Temporal counts as unreachable. */
const TEMPORAL_DEADLINE_MS = 30_000;

type MigrateResult = {
  applied: MigrationResult['applied'];
  already_applied: MigrationResult['alreadyApplied'];
  /** null when no Temporal is configured (no TEMPORAL_ADDRESS, no Temporal profile, no running stack). */
  search_attributes: SearchAttributeRegistration | null;
};

export async function migrateAll(options: { json?: boolean }): Promise<void> {
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
