/**
 * Slow and abusive clients (docs/limits.md, "Slow and abusive clients"), on every listener settle
 * opens: a body or headers that do not arrive in time are cut off (408 with the documented body, or
 * the connection closed), a connection past the cap is closed at once, the codec server refuses an
 * unauthenticated body without reading it, and every HTTP server in src/ is made by the one helper.
 * A legitimate webhook keeps working throughout. Bounds are bounds on a hang, never on speed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startCodecServer } from '../src/codec/server';
import { ConfigError, loadConfig } from '../src/config';
import { buildGateway } from '../src/gateway/server';
import type { ListenerLimits } from '../src/lib/listener-limits';
import { logger } from '../src/lib/logger';
import { PROJECT_ROOT } from '../src/lib/paths';
import { startMetricsServer } from '../src/metrics/metrics-server';
import { EncryptionCodec, StaticKeySource } from '../src/temporal/payload-codec';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  TEMPORAL_ADDRESS,
  type TestStack,
} from '../testkit/harness';

/** Short enough for a test, each at least the 1 s the configuration allows. */
const LIMITS: ListenerLimits = {
  requestTimeoutMs: 2_000,
  headersTimeoutMs: 1_000,
  idleTimeoutMs: 2_000,
  maxConnections: 50,
};
/** A cut-off must come within this: the timeout, Node's 1 s check, and a loaded machine's slack. */
const CUT_OFF_BOUND_MS = 15_000;
const CODEC_TOKEN = randomBytes(24).toString('hex');

let stack: TestStack;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  stack = await startTestStack();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await stack.close();
});

/** A gateway on the test stack's pool, Temporal and task queue, with these limits. */
async function gateway(limits: ListenerLimits): Promise<{ app: FastifyInstance; url: string; port: number }> {
  const app = buildGateway({
    pool: stack.pool,
    client: stack.client,
    taskQueue: stack.taskQueue,
    webhookSecrets: [stack.secret],
    apiToken: stack.apiToken,
    logger,
    listenerLimits: limits,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  cleanups.push(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, port };
}

type Cut = { afterMs: number; received: string };

/**
 * Opens a connection, writes `first`, then one byte of `trickle` every 250 ms, never finishing; resolves
 * when the server closes the connection (with what it answered), rejects if it is still open after
 * CUT_OFF_BOUND_MS.
 */
function stalledClient(port: number, first: string, trickle = 'a'): Promise<Cut> {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString()));
  socket.on('error', () => {});
  socket.write(first);
  const dripping = setInterval(() => {
    if (!socket.destroyed && socket.writable) socket.write(trickle);
  }, 250);
  return new Promise<Cut>((resolve, reject) => {
    const bound = setTimeout(() => {
      clearInterval(dripping);
      socket.destroy();
      reject(
        new Error(`still open after ${CUT_OFF_BOUND_MS} ms, having answered ${JSON.stringify(received)}`),
      );
    }, CUT_OFF_BOUND_MS);
    socket.on('close', () => {
      clearInterval(dripping);
      clearTimeout(bound);
      resolve({ afterMs: Date.now() - started, received });
    });
  });
}

/**
 * Closed, with no answer, or with a 408 and settle's error body last (a route that needs no body may
 * have answered before the stalled body was cut off).
 */
function assertTimedOut(cut: Cut) {
  if (cut.received === '') return;
  const last = cut.received.lastIndexOf('HTTP/1.1 ');
  const answer = cut.received.slice(last);
  assert.match(answer, /^HTTP\/1\.1 408 /, cut.received);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  assert.equal(body.status, 'rejected');
  assert.equal(typeof body.error, 'string');
}

const slowBody = (path: string, headers = '') =>
  `POST ${path} HTTP/1.1\r\nHost: settle\r\nContent-Type: application/json\r\n${headers}Content-Length: 4096\r\n\r\n{`;
const slowHeaders = (path: string) => `POST ${path} HTTP/1.1\r\nHost: settle\r\nX-Slow: `;

async function acceptedWebhook(url: string) {
  const answer = await postWebhook({ gatewayUrl: url, secret: stack.secret }, paymentEvent());
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
}

describe('a client that sends too slowly is cut off', () => {
  test('on the gateway: a stalled body, then stalled headers; a webhook meanwhile is accepted', async () => {
    const { url, port } = await gateway(LIMITS);
    const body = stalledClient(port, slowBody('/webhooks/payments'));
    const headers = stalledClient(port, slowHeaders('/webhooks/payments'), 'x');
    await acceptedWebhook(url);
    for (const cut of [await body, await headers]) assertTimedOut(cut);
    await acceptedWebhook(url);
  });

  test('on the codec server (authenticated, so only the timeout stops it)', async () => {
    const server = await startCodecServer({
      codec: new EncryptionCodec(new StaticKeySource([{ id: 'k1', key: randomBytes(32) }])),
      token: CODEC_TOKEN,
      namespace: 'default',
      corsOrigins: [],
      host: '127.0.0.1',
      port: 0,
      limits: LIMITS,
      logger,
    });
    cleanups.push(() => server.close());
    const port = (server.app.server.address() as AddressInfo).port;
    const cuts = await Promise.all([
      stalledClient(port, slowBody('/decode', `Authorization: Bearer ${CODEC_TOKEN}\r\n`)),
      stalledClient(port, slowHeaders('/decode'), 'x'),
    ]);
    for (const cut of cuts) assertTimedOut(cut);
  });

  test("on the worker's metrics endpoint", async () => {
    const server = await startMetricsServer({ port: 0, host: '127.0.0.1', limits: LIMITS });
    cleanups.push(() => server.close());
    const port = (server.server.address() as AddressInfo).port;
    const cuts = await Promise.all([
      stalledClient(port, slowBody('/metrics')),
      stalledClient(port, `GET /metrics HTTP/1.1\r\nHost: settle\r\nX-Slow: `, 'x'),
    ]);
    for (const cut of cuts) assertTimedOut(cut);
    assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
  });
});

describe('the connection cap', () => {
  test('a connection past SETTLE_MAX_CONNECTIONS is closed at once; webhooks go through once they leave', async () => {
    const cap = 3;
    // Timeouts long enough that the held connections stay open while the test looks.
    const { app, url, port } = await gateway({
      ...LIMITS,
      headersTimeoutMs: 30_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 30_000,
      maxConnections: cap,
    });
    const held: Socket[] = [];
    for (let i = 0; i < cap; i += 1) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('GET /healthz HTTP/1.1\r\nHost: settle\r\n');
      held.push(socket);
    }
    const open = () =>
      new Promise<number>((resolve, reject) =>
        app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
      );
    for (let i = 0; (await open()) < cap; i += 1) {
      assert.ok(i < 100, 'the held connections reach the server');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const extra = await stalledClient(port, 'GET /healthz HTTP/1.1\r\nHost: settle\r\n\r\n');
    assert.equal(extra.received, '', 'the connection past the cap is closed unanswered');
    await assert.rejects(fetch(`${url}/healthz`));

    for (const socket of held) socket.destroy();
    for (let i = 0; (await open()) > 0; i += 1) {
      assert.ok(i < 200, 'the held connections leave');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await acceptedWebhook(url);
  });
});

describe('the codec server', () => {
  test('answers 401 to an unauthenticated huge body before it is sent, and closes the connection', async () => {
    const server = await startCodecServer({
      codec: new EncryptionCodec(new StaticKeySource([{ id: 'k1', key: randomBytes(32) }])),
      token: CODEC_TOKEN,
      namespace: 'default',
      corsOrigins: [],
      host: '127.0.0.1',
      port: 0,
      logger,
    });
    cleanups.push(() => server.close());
    const port = (server.app.server.address() as AddressInfo).port;
    // 24 MiB declared, none of it sent: only a server that does not wait for the body answers.
    const cut = await new Promise<Cut>((resolve, reject) => {
      const started = Date.now();
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString()));
      socket.on('error', () => {});
      const bound = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no answer within ${CUT_OFF_BOUND_MS} ms: ${JSON.stringify(received)}`));
      }, CUT_OFF_BOUND_MS);
      socket.on('close', () => {
        clearTimeout(bound);
        resolve({ afterMs: Date.now() - started, received });
      });
      socket.write(
        `POST /decode HTTP/1.1\r\nHost: settle\r\nContent-Type: application/json\r\nContent-Length: ${24 * 1024 * 1024}\r\n\r\n`,
      );
    });
    assert.match(cut.received, /^HTTP\/1\.1 401 /);
    assert.match(cut.received, /"error":"unauthorized"/);

    // A wrong token in the path is refused the same way; the right one decodes.
    const wrong = await fetch(`${server.url}/not-the-token/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [] }),
    });
    assert.equal(wrong.status, 401);
    const right = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CODEC_TOKEN}` },
      body: JSON.stringify({ payloads: [] }),
    });
    assert.equal(right.status, 200);
    assert.deepEqual(await right.json(), { payloads: [] });
  });
});

describe('the limits are configuration', () => {
  const base = { DATABASE_URL: 'postgres://x/y', TEMPORAL_ADDRESS };
  test('with defaults, and a bad value stops the process naming the variable', () => {
    const config = loadConfig(base, { temporal: 'dev-stack' });
    assert.equal(config.requestTimeoutMs, 30_000);
    assert.equal(config.headersTimeoutMs, 10_000);
    assert.equal(config.idleTimeoutMs, 75_000);
    assert.equal(config.maxConnections, 1000);
    assert.equal(config.admissionWaitMs, 2_000);
    for (const [variable, value] of [
      ['SETTLE_REQUEST_TIMEOUT', '0s'],
      ['SETTLE_HEADERS_TIMEOUT', 'soon'],
      ['SETTLE_IDLE_TIMEOUT', '-5s'],
      ['SETTLE_MAX_CONNECTIONS', '0'],
      ['SETTLE_ADMISSION_WAIT', '0s'],
      ['SETTLE_GATEWAY_METRICS_PORT', '70000'],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...base, [variable]: value }, { temporal: 'dev-stack' }),
        (error: unknown) =>
          error instanceof ConfigError && error.issues.some((issue) => issue.variable === variable),
        `${variable}=${value}`,
      );
    }
  });
});

test('every HTTP server in src/ is made by createLimitedServer', () => {
  const root = join(PROJECT_ROOT, 'src');
  const files = (readdirSync(root, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(root, file));
  const helper = join(root, 'lib', 'listener-limits.ts');
  const offenders: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const name = relative(PROJECT_ROOT, file);
    if (
      file !== helper &&
      /\bcreate(Secure)?Server\s*\(/.test(text) &&
      /from 'node:(http|https|http2)'/.test(text)
    ) {
      offenders.push(`${name}: creates a server itself`);
    }
    for (const call of text.matchAll(/\bFastify\(\{([\s\S]*?)\n {2}\}\)/g)) {
      if (!/serverFactory:\s*\([^)]*\)\s*=>\s*createLimitedServer\(/.test(call[1]!))
        offenders.push(`${name}: Fastify without createLimitedServer`);
    }
    if (/\bFastify\(\s*\)/.test(text)) offenders.push(`${name}: Fastify() without options`);
  }
  assert.deepEqual(offenders, []);
});
