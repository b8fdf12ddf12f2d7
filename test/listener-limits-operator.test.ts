/**
 * Operator endpoints off the webhook path (docs/operations.md, "Reading the SLOs"; docs/limits.md):
 * /metrics on PORT needs the API token, the operator listener serves it and /readyz in full without
 * one; a flood of scrapes while webhooks arrive costs a few statements a second and every webhook is
 * accepted; with every PostgreSQL connection held, a webhook is answered 503 with Retry-After within
 * SETTLE_ADMISSION_WAIT instead of queueing, and writes nothing. Bounds are bounds on a hang.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { createPool } from '../src/db/pool';
import { startGateway } from '../src/gateway/run';
import { buildGateway } from '../src/gateway/server';
import { logger } from '../src/lib/logger';
import { parsePrometheusText, sumOf } from '../src/metrics/prometheus-text';
import { countRows, paymentEvent, postWebhook, startTestStack, type TestStack } from '../testkit/harness';

let stack: TestStack;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  stack = await startTestStack();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await stack.close();
});

/** The statements only the operator views run (the gauges read from PostgreSQL). */
const OPERATOR_STATEMENT = /\boutbox\b|\breminders\b|to_regclass|WITH exceptions/;

/** The pool, counting the operator views' statements sent through `pool.query`. */
function countingPool(pool: pg.Pool, counted: { n: number }): pg.Pool {
  return new Proxy(pool, {
    get(target, property) {
      if (property === 'query') {
        return function (this: unknown, ...args: unknown[]) {
          const first = args[0] as string | { text?: string };
          const text = typeof first === 'string' ? first : (first?.text ?? '');
          if (OPERATOR_STATEMENT.test(text)) counted.n += 1;
          return (target.query as (...a: unknown[]) => unknown).apply(this ?? target, args);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function gateway(options: { pool: pg.Pool; admissionWaitMs?: number }) {
  const app = buildGateway({
    pool: options.pool,
    client: stack.client,
    taskQueue: stack.taskQueue,
    webhookSecrets: [stack.secret],
    apiToken: stack.apiToken,
    logger,
    admissionWaitMs: options.admissionWaitMs,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  cleanups.push(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

const withToken = () => ({ headers: { authorization: `Bearer ${stack.apiToken}` } });

describe('the operator endpoints', () => {
  test('/metrics on PORT needs the token; the operator listener serves /metrics and /readyz without one', async () => {
    const { app, operatorListener } = await startGateway({
      config: { ...stack.config, port: 0, gatewayMetricsPort: 0 },
      pool: stack.pool,
      client: stack.client,
      host: '127.0.0.1',
    });
    cleanups.push(() => app.close());
    assert.ok(operatorListener, 'SETTLE_GATEWAY_METRICS_PORT starts the operator listener');
    cleanups.push(() => operatorListener.close());
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    const refused = await fetch(`${url}/metrics`);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: string }).error, 'unauthorized');
    const bearer = await fetch(`${url}/metrics`, withToken());
    assert.equal(bearer.status, 200);
    assert.match(await bearer.text(), /^settle_open_exceptions\{kind="unmatched"\} \d+$/m);

    const scraped = await fetch(`${operatorListener.url}/metrics`);
    assert.equal(scraped.status, 200);
    const samples = parsePrometheusText(await scraped.text());
    assert.ok(samples.some((s) => s.name === 'settle_open_exceptions'));
    assert.equal(sumOf(samples, 'settle_outbox_pending') >= 0, true);
    const ready = await fetch(`${operatorListener.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', postgres: true, temporal: true });

    // PORT's /readyz tells every prober up or down, nothing more.
    const probe = (await (await fetch(`${url}/readyz`)).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(probe).sort(), ['postgres', 'status', 'temporal']);
  });

  test('a flood of scrapes while 20 webhooks arrive: every webhook is accepted, the scrapes cost a few statements a second', async () => {
    const counted = { n: 0 };
    const url = await gateway({ pool: countingPool(stack.pool, counted) });
    const started = Date.now();
    let done = false;
    let scrapes = 0;
    const scrapers = Array.from({ length: 40 }, async () => {
      for (let i = 0; !done || i < 3; i += 1) {
        const response = await fetch(`${url}/metrics`, withToken());
        assert.equal(response.status, 200);
        await response.text();
        scrapes += 1;
      }
    });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        postWebhook({ gatewayUrl: url, secret: stack.secret }, paymentEvent()),
      ),
    );
    done = true;
    await Promise.all(scrapers);
    const elapsedS = Math.ceil((Date.now() - started) / 1000);
    assert.deepEqual(
      answers.map((answer) => answer.status),
      Array.from({ length: 20 }, () => 202),
    );
    // One reading of the gauges is five statements, and there is one a second at most.
    const bound = 6 * (elapsedS + 1);
    assert.ok(scrapes > bound, `${scrapes} scrapes: a flood`);
    assert.ok(counted.n <= bound, `${scrapes} scrapes in ${elapsedS} s cost ${counted.n} statements`);
  });
});

describe('a pool with no free connection', () => {
  test('a webhook is answered 503 with Retry-After within SETTLE_ADMISSION_WAIT, writes nothing, and goes through later', async () => {
    const pool = createPool(stack.databaseUrl, { max: 3 });
    cleanups.push(() => pool.end());
    const url = await gateway({ pool, admissionWaitMs: 1_000 });
    const held = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    const event = paymentEvent();
    const started = Date.now();
    let refused;
    try {
      refused = await postWebhook({ gatewayUrl: url, secret: stack.secret }, event, {
        headers: {},
      });
    } finally {
      for (const client of held) client.release();
    }
    const waitedMs = Date.now() - started;
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error, 'database_unavailable');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    // 1 s asked; anything near pg's own 20 s connection timeout would be the queue it replaces.
    assert.ok(waitedMs < 10_000, `answered after ${waitedMs} ms`);
    assert.equal(await countRows(stack.pool, 'events', event.id), 0);

    const accepted = await postWebhook({ gatewayUrl: url, secret: stack.secret }, event);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
  });
});
