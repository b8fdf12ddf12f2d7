import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { syncGeneratedChecks } from './generated-checks';
import { withTransaction } from './transaction';

const MIGRATIONS_DIR = join(__dirname, 'migrations');
/** Any constant works; it only has to be the same for every settle process. */
const MIGRATION_LOCK_ID = 7_420_391;

export type MigrationResult = { applied: string[]; alreadyApplied: string[] };

/**
 * Applies the numbered .sql files not yet recorded, then the CHECKs generated from settle's lists
 * (generated-checks.ts), in one transaction, under an advisory lock so that several processes
 * starting at once apply each migration once.
 */
export async function migrate(pool: pg.Pool): Promise<MigrationResult> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((name) => /^\d{3}_[a-z0-9_]+\.sql$/.test(name))
    .sort();
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_ID]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations');
    const done = new Set(rows.map((row) => row.name));
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const name of files) {
      if (done.has(name)) {
        result.alreadyApplied.push(name);
        continue;
      }
      await client.query(readFileSync(join(MIGRATIONS_DIR, name), 'utf8'));
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1::text)', [name]);
      result.applied.push(name);
    }
    await syncGeneratedChecks(client);
    return result;
  });
}
