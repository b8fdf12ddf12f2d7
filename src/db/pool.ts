import pg from 'pg';

// bigint columns (amounts, ids) come back as numbers: amounts are minor units far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * The reconcile path's statements are named (`{ name, text, values }`: a server-side prepared
 * statement per connection), so PostgreSQL parses and plans each once per connection rather than on
 * every call (docs/performance.md, B1 against B0, has what that saves). A name always goes with the
 * same text.
 */
export type Queryable = pg.Pool | pg.PoolClient;

export function createPool(databaseUrl: string, options: { max?: number } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 20,
    // A bound on a hang, not on the machine's speed: a refused connection fails at once, and a
    // connect (or a wait for a free client) on a saturated host can take several seconds.
    connectionTimeoutMillis: 20_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its server (PostgreSQL restarted) must not crash the process.
  pool.on('error', () => {});
  return pool;
}
