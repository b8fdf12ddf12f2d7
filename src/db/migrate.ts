import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { PROJECT_ROOT } from '../lib/paths';
import { syncGeneratedChecks } from './generated-checks';
import { withTransaction } from './transaction';

// At the top of the checkout (and of the image), beside src/: the numbered files are data, and the
// first ones name providers, which src/ keeps to the providers' table.
const MIGRATIONS_DIR = join(PROJECT_ROOT, 'migrations');
/** Any constant works; it only has to be the same for every settle process. */
const MIGRATION_LOCK_ID = 7_420_391;

/**
 * The contract migrations: those that break the release before them while its processes still run.
 * Every other file is expand (the default): the previous release's code keeps working on the schema
 * it leaves, so `settle migrate` applies it before the new release rolls out. A contract migration
 * waits for `settle migrate --contract`, run once no process of the previous release remains
 * (docs/deployment.md, "Upgrades"); on a database no release has migrated yet nothing older can be
 * running, and `settle migrate` applies it with the rest. Each entry says what it breaks.
 */
export const CONTRACT_MIGRATIONS: Readonly<Record<string, string>> = {
  '017_claim_partitions.sql':
    'partitions events and claims by week: no unique key on event_id alone remains, and the previous ' +
    "release's INSERT … ON CONFLICT (event_id) fails on every webhook",
};

export type MigrationResult = {
  applied: string[];
  alreadyApplied: string[];
  /** Contract migrations not applied: they wait for `settle migrate --contract`. */
  heldBack: string[];
};

/** Every migration file, in the order they apply (by name). */
export function migrationFiles(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((name) => /^\d{3}_[a-z0-9_]+\.sql$/.test(name))
    .sort();
}

/** A migration file's SQL. */
export function migrationSql(name: string): string {
  return readFileSync(join(MIGRATIONS_DIR, name), 'utf8');
}

/**
 * Applies the numbered .sql files not yet recorded, then the CHECKs generated from settle's lists
 * (generated-checks.ts), in one transaction, under an advisory lock so that several processes
 * starting at once apply each migration once.
 *
 * Expand, then contract: on a database a release already runs on, the contract migrations
 * (CONTRACT_MIGRATIONS) are held back unless `contract` is set, and the generated CHECKs only widen
 * (a value the previous release may still write stays allowed); with `contract`, or on a database no
 * release has migrated, everything applies and the CHECKs allow exactly settle's lists.
 */
export async function migrate(
  pool: pg.Pool,
  options: {
    /** Apply the files up to this one (its name), no later: a database as an older settle left it (tests). */
    through?: string;
    /** Apply the contract migrations too: no process of the previous release remains. */
    contract?: boolean;
  } = {},
): Promise<MigrationResult> {
  const files = migrationFiles().filter((name) => options.through === undefined || name <= options.through);
  if (options.contract && files.includes(PARTITIONS_MIGRATION)) await prepareClaimPartitions(pool);
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
    const contract = options.contract === true || done.size === 0;
    const result: MigrationResult = { applied: [], alreadyApplied: [], heldBack: [] };
    for (const name of files) {
      if (done.has(name)) {
        result.alreadyApplied.push(name);
        continue;
      }
      if (!contract && name in CONTRACT_MIGRATIONS) {
        result.heldBack.push(name);
        continue;
      }
      await client.query(migrationSql(name));
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1::text)', [name]);
      result.applied.push(name);
    }
    await syncGeneratedChecks(client, contract ? 'exact' : 'widen');
    return result;
  });
}

export type MigrationStatus = {
  applied: string[];
  /** What `settle migrate` would apply: the expand migrations (everything, on a database no release has migrated). */
  pending: string[];
  /** Contract migrations waiting for `settle migrate --contract`, each with what it breaks. */
  contract: { name: string; breaks: string }[];
};

/** What `settle migrate` and `settle migrate --contract` would apply now; reads only. */
export async function migrationStatus(db: pg.Pool): Promise<MigrationStatus> {
  const table = await db.query<{ exists: boolean }>(
    `SELECT to_regclass('schema_migrations') IS NOT NULL AS exists`,
  );
  const { rows } = table.rows[0]!.exists
    ? await db.query<{ name: string }>('SELECT name FROM schema_migrations')
    : { rows: [] };
  const done = new Set(rows.map((row) => row.name));
  const status: MigrationStatus = { applied: [], pending: [], contract: [] };
  for (const name of migrationFiles()) {
    if (done.has(name)) status.applied.push(name);
    else if (name in CONTRACT_MIGRATIONS && done.size > 0)
      status.contract.push({ name, breaks: CONTRACT_MIGRATIONS[name]! });
    else status.pending.push(name);
  }
  return status;
}

/** Migration 017, which partitions claims and events by week. */
const PARTITIONS_MIGRATION = '017_claim_partitions.sql';

/**
 * Before migration 017 on a database whose claims and events still are the plain tables of 001–016:
 * proves each table's rows older than a bound two weeks ahead, so the migration can attach the table
 * as its legacy partition without scanning it under its lock. The CHECK is added NOT VALID (a
 * catalog change, an instant's lock; new rows are checked from now on, and every new row is older
 * than the bound), then validated in a statement of its own: VALIDATE reads the whole table under
 * SHARE UPDATE EXCLUSIVE, so the gateway and the workers keep writing while it runs. Under the
 * migration's lock, so several processes starting at once validate once; a VALIDATE cut off is
 * simply done again by the next start. Nothing to do on an empty or already partitioned database.
 */
export async function prepareClaimPartitions(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_ID]);
    const plain = await client.query<{ plain: boolean }>(
      `SELECT to_regclass('schema_migrations') IS NOT NULL
              AND (SELECT relkind FROM pg_class WHERE oid = to_regclass('claims')) = 'r'
              AND (SELECT relkind FROM pg_class WHERE oid = to_regclass('events')) = 'r' AS plain`,
    );
    if (!plain.rows[0]?.plain) return;
    const done = await client.query('SELECT 1 FROM schema_migrations WHERE name = $1::text', [
      PARTITIONS_MIGRATION,
    ]);
    if (done.rows.length > 0) return;
    for (const [table, key] of [
      ['claims', 'claimed_at'],
      ['events', 'received_at'],
    ] as const) {
      const constraint = `${table}_before_partitions`;
      const existing = await client.query<{ valid: boolean }>(
        `SELECT convalidated AS valid FROM pg_constraint WHERE conrelid = $1::regclass AND conname = $2::text`,
        [table, constraint],
      );
      if (existing.rows[0]?.valid) continue;
      if (!existing.rows[0]) {
        const empty = await client.query(`SELECT 1 FROM ${table} LIMIT 1`);
        if (empty.rows.length === 0) continue;
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL lock_timeout = 5000`);
          const bound = await client.query<{ bound: string }>(
            `SELECT ((date_trunc('week', greatest(now(), max(${key})) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                     + interval '14 days')::text AS bound FROM ${table}`,
          );
          await client.query(
            `ALTER TABLE ${table} ADD CONSTRAINT ${constraint} CHECK (${key} < '${bound.rows[0]!.bound}'::timestamptz) NOT VALID`,
          );
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      await client.query(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${constraint}`);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    client.release();
  }
}
