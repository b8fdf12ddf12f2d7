import type pg from 'pg';
import { beginLockingEventId, endTransaction } from './claims';

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
  try {
    if (options.lockEventId === undefined) await client.query('BEGIN');
    else await beginLockingEventId(client, options.lockEventId);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    endTransaction(client);
    client.removeListener('error', onConnectionLost);
    client.release(broken);
  }
}
