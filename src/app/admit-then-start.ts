import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { withTransaction } from '../db/transaction';
import { classifyDatabaseFailure, isTransientConflict } from '../domain/errors';
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
 * `insert` then answers false and `whenKnown` reads the row that won. A transaction that lost a race
 * to another (deadlock, serialization, lock timeout) before the start was asked for runs again.
 */
export async function admitThenStart<Known, Started>(
  pool: pg.Pool,
  steps: {
    insert: (tx: pg.PoolClient) => Promise<boolean>;
    whenKnown: (tx: pg.PoolClient) => Promise<Known>;
    /** On the transaction, so that what the start records (its run ID) commits with the row. */
    start: (tx: pg.PoolClient) => Promise<Started>;
  },
  /** A payment event's ID: the transaction holds its advisory lock from its first round trip. */
  options: { lockEventId?: string } = {},
): Promise<Admission<Known, Started>> {
  for (let attempt = 1; ; attempt += 1) {
    // Set inside the transaction's callback, so read through the union, not narrowed to its start.
    let stage = 'inserting' as 'inserting' | 'starting' | 'committing';
    try {
      return await withTransaction(
        pool,
        async (tx): Promise<Admission<Known, Started>> => {
          if (!(await steps.insert(tx))) return { kind: 'known', known: await steps.whenKnown(tx) };
          stage = 'starting';
          const started = await steps.start(tx);
          stage = 'committing';
          return { kind: 'started', started };
        },
        options,
      );
    } catch (error) {
      // A race lost to another transaction before the start was asked for left nothing anywhere: the
      // admission runs again. After the start, a run may exist, and the caller answers 503 as for any
      // failed commit (the provider's retry then finds what was made durable).
      const code = (error as { code?: unknown }).code;
      if (stage !== 'inserting' || !isTransientConflict(code) || attempt >= CONFLICT_ATTEMPTS) {
        return { kind: 'failed', dependency: stage === 'starting' ? 'temporal' : 'postgres', error };
      }
      await delay(CONFLICT_BACKOFF_MS * attempt * (0.5 + Math.random()));
    }
  }
}

/**
 * How often an admission runs again after losing a race (a deadlock, a serialization failure, a lock
 * timeout) before it answers 503 with Retry-After, and the mean wait before the second try (twice it
 * before the third). The locks an admission takes are held for one Temporal start at most.
 */
const CONFLICT_ATTEMPTS = 3;
const CONFLICT_BACKOFF_MS = 25;

/**
 * A database call of an admission that failed: a value PostgreSQL refused (SQLSTATE class 22 or 54)
 * is the request's fault, a 400 naming the body; anything else but a bug means PostgreSQL is down or
 * busy, or the admission kept losing a race to another transaction: a 503. A bug is rethrown.
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
