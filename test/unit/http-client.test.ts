/**
 * settle's HTTP client keeps connections alive: what that must not change. A request still gets its
 * answer when the server drops a kept connection, a connection made without the public-address check
 * never serves a request that needs it, and a slow server still costs one timeout.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createHttpClient, HttpRequestError, type PostOptions } from '../../src/lib/http';
import { startReceiver, type Behaviour, type RecordingReceiver } from '../../testkit/receiver';

const send = (body: string, extra: Partial<PostOptions> = {}): PostOptions => ({
  headers: { 'content-type': 'application/json' },
  body,
  timeoutMs: 5_000,
  allowPrivateTargets: true,
  ...extra,
});

describe('the HTTP client', () => {
  const receivers: RecordingReceiver[] = [];
  const downstream = async (behaviour?: Behaviour) => {
    const receiver = await startReceiver(behaviour);
    receivers.push(receiver);
    return receiver;
  };
  after(async () => {
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });

  test('sends requests one after another on one kept connection', async () => {
    // Each answer names the request it answers, so a mixed-up response on the kept connection shows.
    const receiver = await downstream((_request, index) => ({
      status: 200,
      headers: { 'x-request': String(index) },
    }));
    const client = createHttpClient();
    for (const n of [1, 2, 3]) {
      const response = await client.post(`${receiver.url}/hook`, send(`{"n":${n}}`));
      assert.equal(response.status, 200);
      assert.equal(response.headers['x-request'], String(n - 1));
    }
    assert.deepEqual(
      receiver.requests.map((r) => [r.body, r.connection]),
      [
        ['{"n":1}', 1],
        ['{"n":2}', 1],
        ['{"n":3}', 1],
      ],
    );
  });

  test('a kept connection the server drops unanswered is retried at once on a fresh one', async () => {
    const receiver = await downstream((request) =>
      request.onConnection > 1 ? { status: 0, drop: true } : { status: 200 },
    );
    const client = createHttpClient();
    const first = await client.post(`${receiver.url}/hook`, send('{"n":1}'));
    const second = await client.post(`${receiver.url}/hook`, send('{"n":2}'));
    assert.deepEqual([first.status, second.status], [200, 200]);
    // The second went out on the kept connection, was cut, and came back on a new one.
    assert.deepEqual(
      receiver.requests.map((r) => [r.body, r.connection, r.onConnection]),
      [
        ['{"n":1}', 1, 1],
        ['{"n":2}', 1, 2],
        ['{"n":2}', 2, 1],
      ],
    );
  });

  test('a connection made where private targets are allowed never serves a public-only request', async () => {
    const receiver = await downstream();
    const client = createHttpClient();
    const url = `${receiver.url.replace('127.0.0.1', 'localhost')}/hook`;
    assert.equal((await client.post(url, send('{"n":1}'))).status, 200);
    const refused = await client.post(url, send('{"n":2}', { allowPrivateTargets: false })).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof HttpRequestError && refused.kind === 'target_refused', String(refused));
    assert.deepEqual(
      receiver.requests.map((r) => r.body),
      ['{"n":1}'],
    );
  });

  test('a server that never answers costs one timeout, whether or not its connection was kept', async () => {
    const receiver = await downstream(() => ({ status: 0, hang: true }));
    const client = createHttpClient();
    for (const n of [1, 2]) {
      const error = await client.post(`${receiver.url}/hook`, send(`{"n":${n}}`, { timeoutMs: 300 })).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      assert.ok(error instanceof HttpRequestError && error.kind === 'timeout', String(error));
    }
    assert.deepEqual(
      receiver.requests.map((r) => r.body),
      ['{"n":1}', '{"n":2}'],
    );
  });
});
