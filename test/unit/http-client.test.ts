/**
 * settle's HTTP client keeps connections alive: what that must not change. A request still gets its
 * answer when the server drops a kept connection, a connection made without the public-address check
 * never serves a request that needs it, and a slow server still costs one timeout.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createHttpClient, HttpRequestError, type PostOptions } from '../../src/lib/http';

type Received = { body: string; connection: number; onConnection: number };

/** A downstream that records each request with the connection it came on; `dropReused` cuts a reused one unanswered. */
function recordingServer(behaviour: { dropReused?: boolean; stall?: boolean } = {}) {
  const received: Received[] = [];
  const connections = new Map<Socket, { id: number; requests: number }>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const connection = connections.get(request.socket)!;
      connection.requests += 1;
      received.push({
        body: Buffer.concat(chunks).toString(),
        connection: connection.id,
        onConnection: connection.requests,
      });
      if (behaviour.stall) return;
      if (behaviour.dropReused && connection.requests > 1) return request.socket.destroy();
      response.writeHead(200, { 'content-type': 'text/plain' }).end(`ok ${received.length}`);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket: Socket) =>
    connections.set(socket, { id: connections.size + 1, requests: 0 }),
  );
  return {
    received,
    connectionCount: () => connections.size,
    async listen(): Promise<number> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return (server.address() as AddressInfo).port;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const send = (body: string, extra: Partial<PostOptions> = {}): PostOptions => ({
  headers: { 'content-type': 'application/json' },
  body,
  timeoutMs: 5_000,
  allowPrivateTargets: true,
  ...extra,
});

describe('the HTTP client', () => {
  const servers: ReturnType<typeof recordingServer>[] = [];
  const server = (behaviour?: Parameters<typeof recordingServer>[0]) => {
    const created = recordingServer(behaviour);
    servers.push(created);
    return created;
  };
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  test('sends requests one after another on one kept connection', async () => {
    const downstream = server();
    const port = await downstream.listen();
    const client = createHttpClient();
    for (const n of [1, 2, 3]) {
      const response = await client.post(`http://127.0.0.1:${port}/hook`, send(`{"n":${n}}`));
      assert.equal(response.status, 200);
      assert.equal(response.body, `ok ${n}`);
    }
    assert.deepEqual(
      downstream.received.map((r) => r.body),
      ['{"n":1}', '{"n":2}', '{"n":3}'],
    );
    assert.equal(downstream.connectionCount(), 1);
  });

  test('a kept connection the server drops unanswered is retried at once on a fresh one', async () => {
    const downstream = server({ dropReused: true });
    const port = await downstream.listen();
    const client = createHttpClient();
    const first = await client.post(`http://127.0.0.1:${port}/hook`, send('{"n":1}'));
    const second = await client.post(`http://127.0.0.1:${port}/hook`, send('{"n":2}'));
    assert.deepEqual([first.status, second.status], [200, 200]);
    // The second went out on the kept connection, was cut, and came back on a new one.
    assert.deepEqual(
      downstream.received.map((r) => [r.body, r.connection, r.onConnection]),
      [
        ['{"n":1}', 1, 1],
        ['{"n":2}', 1, 2],
        ['{"n":2}', 2, 1],
      ],
    );
  });

  test('a connection made where private targets are allowed never serves a public-only request', async () => {
    const downstream = server();
    const port = await downstream.listen();
    const client = createHttpClient();
    const url = `http://localhost:${port}/hook`;
    assert.equal((await client.post(url, send('{"n":1}'))).status, 200);
    const refused = await client.post(url, send('{"n":2}', { allowPrivateTargets: false })).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof HttpRequestError && refused.kind === 'target_refused', String(refused));
    assert.deepEqual(
      downstream.received.map((r) => r.body),
      ['{"n":1}'],
    );
  });

  describe('a server that never answers', () => {
    let port = 0;
    const stalled = recordingServer({ stall: true });
    before(async () => {
      port = await stalled.listen();
    });
    after(() => stalled.close());

    test('costs one timeout, whether or not its connection was kept', async () => {
      const client = createHttpClient();
      for (const n of [1, 2]) {
        const error = await client
          .post(`http://127.0.0.1:${port}/hook`, send(`{"n":${n}}`, { timeoutMs: 300 }))
          .then(
            () => undefined,
            (failure: unknown) => failure,
          );
        assert.ok(error instanceof HttpRequestError && error.kind === 'timeout', String(error));
      }
      assert.deepEqual(
        stalled.received.map((r) => r.body),
        ['{"n":1}', '{"n":2}'],
      );
    });
  });
});
