import type pg from 'pg';
import { beginLockingEventId, endTransaction } from './claims';
import type { Queryable } from './pool';

/**
 * Runs `fn` in one transaction: COMMIT when it resolves, ROLLBACK when it throws. A client whose
 * connection broke is destroyed rather than returned to the pool. The pool stops listening for a
 * client's errors while it is checked out, so a connection lost between two statements (PostgreSQL
 * restarted while the gateway awaits Temporal's start) would be an unhandled 'error' that kills the
 * process: it is caught here, and the transaction fails on its next statement instead.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  /**
   * `lockEventId`: the transaction opens holding that event ID's advisory lock (claims.lockEventId),
   * BEGIN and the lock in one round trip; lockEventId of that ID inside it then costs nothing.
   */
  options: { lockEventId?: string } = {},
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onConnectionLost = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onConnectionLost);
  const deferred: string[] = [];
  atCommit.set(client, deferred);
  try {
    if (options.lockEventId === undefined) await client.query('BEGIN');
    else await beginLockingEventId(client, options.lockEventId);
    const result = await fn(client);
    // What the transaction handed to its COMMIT goes with it: one round trip (a simple query).
    await client.query([...deferred, 'COMMIT'].join('; '));
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    atCommit.delete(client);
    endTransaction(client);
    client.removeListener('error', onConnectionLost);
    client.release(broken);
  }
}

/** The statements each open transaction sends with its COMMIT (deferToCommit). */
const atCommit = new WeakMap<Queryable, string[]>();

/**
 * Sends `statement` with the COMMIT of the transaction `db` is in (withTransaction's), in the same
 * round trip, when nothing in the transaction reads what it writes: true if so. False outside such a
 * transaction, or for a statement no query text can carry (a NUL byte): the caller runs it itself.
 * `statement` takes no parameters: its values are escaped literals (pg.escapeLiteral). An error in it
 * fails the COMMIT, and the transaction rolls back as for any failed statement.
 */
export function deferToCommit(db: Queryable, statement: string): boolean {
  const deferred = atCommit.get(db);
  if (!deferred || statement.includes('\0')) return false;
  deferred.push(statement);
  return true;
}
