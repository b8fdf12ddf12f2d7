import pg from 'pg';

// bigint columns (amounts, ids) come back as numbers: amounts are minor units far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * The reconcile path's statements are named (`{ name, text, values }`: a server-side prepared
 * statement per connection), so PostgreSQL parses and plans each once per connection rather than on
 * every call (docs/performance.md has what that saves). A name always goes with the
 * same text.
 */
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * Every connection's transactions run at READ COMMITTED whatever the server's or the role's default:
 * an ID's uniqueness across the weekly partitions (db/events.ts insertAdmittedEvent) and the claim
 * rely on a statement after the event's lock seeing what committed while it waited, which a
 * REPEATABLE READ or SERIALIZABLE snapshot taken earlier in the transaction would not.
 */
const READ_COMMITTED = '-c default_transaction_isolation=read\\ committed';

/** The connection string with READ_COMMITTED added to any `options` it already carries (which win over the pool's). */
export function pinnedIsolation(databaseUrl: string): { connectionString: string; options?: string } {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return { connectionString: databaseUrl, options: READ_COMMITTED };
  }
  const own = url.searchParams.get('options');
  if (own === null) return { connectionString: databaseUrl, options: READ_COMMITTED };
  url.searchParams.set('options', `${own} ${READ_COMMITTED}`);
  return { connectionString: url.toString() };
}

export function createPool(databaseUrl: string, options: { max?: number } = {}): pg.Pool {
  const pool = new pg.Pool({
    ...pinnedIsolation(databaseUrl),
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

/** No client of the pool came free within the wait: answered like PostgreSQL being unavailable. */
export class PoolWaitTimeout extends Error {
  readonly code = 'pool_wait_timeout';
  constructor(waitMs: number) {
    super(`no PostgreSQL connection came free within ${waitMs} ms`);
  }
}

type ConnectCallback = (error: Error | undefined, client?: pg.PoolClient, done?: () => void) => void;

/**
 * The same pool, for callers that must not queue for a client without bound (the gateway's requests):
 * when every client is checked out, `connect` (and so `query`, and `withTransaction`) waits at most
 * `waitMs` for one to come free, then throws PoolWaitTimeout, which `classifyDatabaseFailure` calls
 * unavailable, so the caller answers 503 with Retry-After and nothing is written. A client that comes
 * free after its caller gave up goes straight back to the pool. Everything else is the pool's own.
 */
export function withBoundedWait(pool: pg.Pool, waitMs: number, onTimeout: () => void = () => {}): pg.Pool {
  const max = pool.options.max ?? 10;
  const acquire = async (): Promise<pg.PoolClient> => {
    if (pool.idleCount > 0 || pool.totalCount < max) return pool.connect();
    const connecting = pool.connect();
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new PoolWaitTimeout(waitMs)), waitMs);
    });
    try {
      return await Promise.race([connecting, gaveUp]);
    } catch (error) {
      if (error instanceof PoolWaitTimeout) {
        onTimeout();
        connecting.then(
          (client) => client.release(),
          () => {},
        );
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
  // pg's `query` takes its client through `this.connect(callback)`: it is bound to the view below.
  const connect = (callback?: ConnectCallback) => {
    const acquired = acquire();
    if (!callback) return acquired;
    acquired.then(
      (client) => callback(undefined, client, () => client.release()),
      (error: Error) => callback(error),
    );
    return undefined;
  };
  const view: pg.Pool = new Proxy(pool, {
    get(target, property) {
      if (property === 'connect') return connect;
      if (property === 'query') return target.query.bind(view);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return view;
}
