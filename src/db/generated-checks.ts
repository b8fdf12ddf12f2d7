import { RECONCILE_OUTCOMES, REMINDER_STATES } from '../domain/lifecycles';
import { OUTBOX_TARGETS } from '../domain/outbox';
import { PROVIDER_NAMES } from '../providers/registry';
import type { Queryable } from './pool';

/**
 * Columns whose allowed values a TypeScript list owns: the migrator writes each one's CHECK from the
 * list, so the database, the types and the API never disagree. Adding a delivery target to
 * DELIVERY_TARGETS is then all it takes for the outbox to accept it (no migration), and so is adding
 * a provider to the providers' table (src/providers/registry.ts) for its exceptions and its cursor.
 */
export const GENERATED_CHECKS = [
  { table: 'claims', column: 'outcome', values: RECONCILE_OUTCOMES },
  { table: 'outbox', column: 'target', values: OUTBOX_TARGETS },
  { table: 'reminders', column: 'state', values: REMINDER_STATES },
  { table: 'provider_exceptions', column: 'provider', values: PROVIDER_NAMES },
  { table: 'recovery_cursors', column: 'provider', values: PROVIDER_NAMES },
] as const satisfies readonly { table: string; column: string; values: readonly string[] }[];

/** The constraint's name: PostgreSQL's own for a column CHECK, as the first migrations created them. */
function constraintName(check: (typeof GENERATED_CHECKS)[number]): string {
  return `${check.table}_${check.column}_check`;
}

const quoted = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * Brings each generated CHECK in line with its list, inside the migration's transaction. `exact`:
 * the CHECK allows the list and nothing else. `widen` (an expand migration, while the previous
 * release may still run): it allows the list and every value it allowed before, so a value the new
 * list dropped stays writable by the code that still writes it, until the contract step. A constraint
 * that already allows what is wanted is left alone (no lock, no scan); one that differs is replaced,
 * which scans the table once. Returns the constraints it replaced.
 */
export async function syncGeneratedChecks(db: Queryable, mode: 'exact' | 'widen'): Promise<string[]> {
  const replaced: string[] = [];
  for (const check of GENERATED_CHECKS) {
    const name = constraintName(check);
    const { rows } = await db.query<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conname = $1::text AND conrelid = $2::regclass`,
      [name, check.table],
    );
    const current = rows[0]
      ? [...rows[0].definition.matchAll(/'((?:[^']|'')*)'::text/g)].map((m) => m[1]!.replaceAll("''", "'"))
      : [];
    const list: string[] = [...check.values];
    const wanted = mode === 'widen' ? [...list, ...current.filter((value) => !list.includes(value))] : list;
    if (rows[0] && current.length === wanted.length && wanted.every((value, i) => current[i] === value))
      continue;
    await db.query(`ALTER TABLE ${check.table} DROP CONSTRAINT IF EXISTS ${name}`);
    await db.query(
      `ALTER TABLE ${check.table} ADD CONSTRAINT ${name} CHECK (${check.column} IN (${wanted.map(quoted).join(', ')}))`,
    );
    replaced.push(name);
  }
  return replaced;
}
