/**
 * A test file's set-up in one line: each `use…` registers a `before` hook that starts something and
 * an `after` hook that stops it, in the suite it is called in (the file, or a `describe`), and returns
 * a stand-in that reads through to it once started:
 *
 *   const carrier = useReceiver();
 *   const stack = useTestStack(() => ({ config: { carrierUrl: carrier.url } }));
 *
 * The `use…` calls start one after another in the order they were made, so one may read what an
 * earlier one started (as the stack above reads the receiver's URL): node:test runs a `before` hook
 * registered at the top level of a file at once, beside the others, so the order is kept here. Each is
 * stopped by its `after` hook, in that same order, once the suite ends. A plain `before` of the file
 * runs beside them and must not need them. Using a stand-in before it started throws.
 */
import { after, afterEach, before } from 'node:test';
import type pg from 'pg';
import { createTestDatabase, startTestStack, type TestStack, type TestStackOptions } from './harness';
import { startReceiver, type Behaviour, type Receiver } from './receiver';

/** A database, a worker and a gateway on a fresh task queue (startTestStack), for the suite. */
export function useTestStack(options: TestStackOptions | (() => TestStackOptions) = {}): TestStack {
  return useStarted(
    'the test stack',
    () => startTestStack(typeof options === 'function' ? options() : options),
    (stack) => stack.close(),
  );
}

/** A recording receiver (startReceiver), for the suite. */
export function useReceiver(behaviour?: Behaviour, secrets?: string[]): Receiver {
  return useStarted(
    'the receiver',
    () => startReceiver(behaviour, secrets),
    (receiver) => receiver.close(),
  );
}

export type TestDatabase = { pool: pg.Pool; url: string };

/** A migrated database of its own (createTestDatabase), dropped once the suite ends. */
export function useTestDatabase(options: Parameters<typeof createTestDatabase>[0] = {}): TestDatabase {
  return useStarted(
    'the test database',
    () => createTestDatabase(options),
    (db) => db.drop(),
  );
}

/** Steps that undo what one test started: each test's are run after it, last pushed first. */
export function useCleanups(): (() => Promise<unknown>)[] {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}

/** The `use…` starts so far, one after another (a failed one does not hold back the next). */
let starts: Promise<unknown> = Promise.resolve();

/** Starts `start()` before the suite, stops it after; the stand-in reads and writes through to it. */
function useStarted<T extends object>(
  what: string,
  start: () => Promise<T>,
  stop: (value: T) => Promise<unknown>,
): T {
  let value: T | undefined;
  before(() => {
    const starting = starts
      .catch(() => {})
      .then(async () => {
        value = await start();
      });
    starts = starting;
    return starting;
  });
  after(async () => {
    if (value) await stop(value);
  });
  const started = (): T => {
    if (!value) throw new Error(`${what} is used before its before hook started it`);
    return value;
  };
  return new Proxy({} as T, {
    get(_, key) {
      const target = started();
      const member: unknown = Reflect.get(target, key, target);
      return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(target) : member;
    },
    set: (_, key, member) => Reflect.set(started(), key, member),
    has: (_, key) => Reflect.has(started(), key),
    ownKeys: () => Reflect.ownKeys(started()),
    getOwnPropertyDescriptor(_, key) {
      const descriptor = Reflect.getOwnPropertyDescriptor(started(), key);
      // The stand-in itself is empty: a proxy may report a property only as configurable.
      return descriptor && { ...descriptor, configurable: true };
    },
  });
}
