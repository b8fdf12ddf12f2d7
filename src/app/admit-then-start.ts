import type pg from 'pg';
import { withTransaction } from '../db/transaction';
import { classifyDatabaseFailure } from '../domain/errors';
import type { FieldIssue } from '../domain/untrusted-json';

/** The dependency that was down when an admission could not be made durable. */
export type Dependency = 'temporal' | 'postgres';

export type Admission<Known, Started> =
  | { kind: 'known'; known: Known }
  | { kind: 'started'; started: Started }
  /** Nothing was written: `error` is the start's own when `dependency` is `temporal`. */
  | { kind: 'failed'; dependency: Dependency; error: unknown };

/**
 * Admit-then-start, the one path a payment event and a reminder take into settle: inside one
 * transaction, insert the row, then start its workflow, then commit. The row commits only once
 * Temporal durably accepted the start; if the start fails, nothing is written and the caller answers
 * 503, so nothing acknowledged is lost. A concurrent admission of the same ID waits on the row's
 * unique key (a payment event's on its advisory lock first, see db/events.ts insertAdmittedEvent);
 * `insert` then answers false and `whenKnown` reads the row that won.
 */
export async function admitThenStart<Known, Started>(
  pool: pg.Pool,
  steps: {
    insert: (tx: pg.PoolClient) => Promise<boolean>;
    whenKnown: (tx: pg.PoolClient) => Promise<Known>;
    start: () => Promise<Started>;
  },
  /** A payment event's ID: the transaction holds its advisory lock from its first round trip. */
  options: { lockEventId?: string } = {},
): Promise<Admission<Known, Started>> {
  let dependency: Dependency = 'postgres';
  try {
    return await withTransaction(
      pool,
      async (tx): Promise<Admission<Known, Started>> => {
        if (!(await steps.insert(tx))) return { kind: 'known', known: await steps.whenKnown(tx) };
        dependency = 'temporal';
        const started = await steps.start();
        dependency = 'postgres';
        return { kind: 'started', started };
      },
      options,
    );
  } catch (error) {
    return { kind: 'failed', dependency, error };
  }
}

/**
 * A database call of an admission that failed: a value PostgreSQL refused (SQLSTATE class 22 or 54)
 * is the request's fault, a 400 naming the body; anything else but a bug means PostgreSQL is down, a
 * 503. A bug is rethrown.
 */
export function refusedByDatabase(
  error: unknown,
): { status: 'invalid'; issues: FieldIssue[] } | { status: 'unavailable'; dependency: 'postgres' } {
  const kind = classifyDatabaseFailure(error);
  if (kind === 'bug') throw error;
  return kind === 'invalid_data'
    ? { status: 'invalid', issues: [{ path: '(body)', message: 'holds a value PostgreSQL cannot store' }] }
    : { status: 'unavailable', dependency: 'postgres' };
}
