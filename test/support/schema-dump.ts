import type pg from 'pg';

/**
 * The whole schema of a database's `public` schema as deterministic text, pg_dump-like but read from
 * the catalog (no client tools, no version banner): tables with their columns, storage options,
 * partitioning, constraints and triggers, then indexes, sequences and functions, each sorted by name.
 * The claim store's week partitions (`claims_w20261207`, migration 017) are named by the date the
 * database was migrated or purged, so they are summed up, not listed: their parent's line says how
 * many there are, and their indexes are left out.
 */
/** The week partitions' names: claims_w20261207, events_w20261207. */
const WEEK_PARTITION = '^(claims|events)_w[0-9]{8}$';

export async function dumpSchema(db: pg.Pool | pg.Client): Promise<string> {
  const out: string[] = [];
  const tables = await db.query<{
    oid: number;
    name: string;
    options: string[] | null;
    partitioning: string | null;
  }>(
    `SELECT c.oid, c.relname AS name, c.reloptions AS options,
            CASE WHEN c.relkind = 'p' THEN 'PARTITION BY ' || pg_get_partkeydef(c.oid) || ', '
                   || (SELECT count(*) FROM pg_inherits i JOIN pg_class w ON w.oid = i.inhrelid
                        WHERE i.inhparent = c.oid AND w.relname ~ $1) || ' week partitions'
                 WHEN c.relispartition THEN 'PARTITION OF ' || (SELECT i.inhparent::regclass::text
                   FROM pg_inherits i WHERE i.inhrelid = c.oid) || ' ' || pg_get_expr(c.relpartbound, c.oid)
            END AS partitioning
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname !~ $1 ORDER BY c.relname`,
    [WEEK_PARTITION],
  );
  for (const table of tables.rows) {
    const columns = await db.query<{ line: string }>(
      `SELECT format('  %I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                     CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                     CASE WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END
                    ) AS line
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
      [table.oid],
    );
    const constraints = await db.query<{ line: string }>(
      `SELECT format('  CONSTRAINT %I %s', conname, pg_get_constraintdef(oid)) AS line
         FROM pg_constraint WHERE conrelid = $1::oid ORDER BY conname`,
      [table.oid],
    );
    out.push(`CREATE TABLE ${table.name} (`);
    out.push([...columns.rows, ...constraints.rows].map((row) => row.line).join(',\n'));
    const partitioning = table.partitioning ? ` -- ${table.partitioning}` : '';
    out.push(
      table.options
        ? `) WITH (${[...table.options].sort().join(', ')});${partitioning}`
        : `);${partitioning}`,
    );
    const triggers = await db.query<{ line: string }>(
      `SELECT pg_get_triggerdef(oid) || ';' AS line FROM pg_trigger
        WHERE tgrelid = $1::oid AND NOT tgisinternal ORDER BY tgname`,
      [table.oid],
    );
    out.push(...triggers.rows.map((row) => row.line), '');
  }
  const indexes = await db.query<{ line: string }>(
    `SELECT indexdef || ';' AS line FROM pg_indexes
      WHERE schemaname = 'public' AND tablename !~ $1 ORDER BY tablename, indexname`,
    [WEEK_PARTITION],
  );
  out.push(...indexes.rows.map((row) => row.line), '');
  const sequences = await db.query<{ line: string }>(
    `SELECT format('CREATE SEQUENCE %I AS %s;', sequencename, data_type) AS line
       FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename`,
  );
  if (sequences.rows.length > 0) out.push(...sequences.rows.map((row) => row.line), '');
  const functions = await db.query<{ line: string }>(
    `SELECT pg_get_functiondef(p.oid) || ';' AS line FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
  );
  out.push(...functions.rows.map((row) => row.line.trimEnd()));
  return `${out.join('\n').trimEnd()}\n`;
}
