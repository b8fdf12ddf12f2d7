/**
 * The namespace check names what is wrong as a problem, never throws its own error, whichever
 * connection the client is on: `settle serve` and `npm start` ask it over the worker's
 * NativeConnection, which (unlike the client's Connection) carries no `options.address`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, type ConnectionLike } from '@temporalio/client';
import { checkNamespace } from '../../src/temporal/connection';

/** A connection like a NativeConnection: services and deadlines, no options; its calls fail as told. */
function connectionFailingWith(error: Error & { code?: number }): ConnectionLike {
  const fail = async () => {
    throw error;
  };
  const run = <R>(_scope: unknown, fn: () => Promise<R>) => fn();
  return {
    workflowService: new Proxy({}, { get: () => fail }),
    operatorService: new Proxy({}, { get: () => fail }),
    plugins: [],
    close: async () => {},
    ensureConnected: async () => {},
    withDeadline: run,
    withMetadata: run,
    withAbortSignal: run,
  } as unknown as ConnectionLike;
}

test('an unreachable Temporal on a connection without options is a problem, not a TypeError', async () => {
  const unavailable = Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED 127.0.0.1:7233'), {
    code: 14,
  });
  const client = new Client({ connection: connectionFailingWith(unavailable), namespace: 'settle' });
  const problem = await checkNamespace(client, { timeoutMs: 1_000 });
  assert.equal(problem?.code, 'unreachable');
  assert.match(problem.message, /Temporal at its configured address is unreachable: .*ECONNREFUSED/);
});

test('a missing namespace on such a connection is named, with the address the caller gives', async () => {
  const notFound = Object.assign(new Error('5 NOT_FOUND: namespace settle not found'), { code: 5 });
  const client = new Client({ connection: connectionFailingWith(notFound), namespace: 'settle' });
  const problem = await checkNamespace(client, { connection: '127.0.0.1:7233 (TLS off)' });
  assert.equal(problem?.code, 'namespace_not_found');
  assert.match(problem.message, /does not exist on 127\.0\.0\.1:7233 \(TLS off\)/);
});
