import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { connectClient } from '../src/client';
import { ConfigError, loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { startGateway } from '../src/gateway/run';
import { startMetricsServer } from '../src/metrics/metrics-server';
import { newSecret } from '../testkit/harness';

const base = {
  DATABASE_URL: 'postgres://settle@127.0.0.1:1/settle',
  TEMPORAL_ADDRESS: '127.0.0.1:1',
  SETTLE_WEBHOOK_SECRETS: newSecret(),
  PORT: '0',
  SETTLE_METRICS_PORT: '0',
};

test('HOST defaults to 127.0.0.1 and a bad value stops the process naming HOST', () => {
  assert.equal(loadConfig(base).host, '127.0.0.1');
  assert.equal(loadConfig({ ...base, HOST: '0.0.0.0' }).host, '0.0.0.0');
  assert.throws(
    () => loadConfig({ ...base, HOST: 'two words' }),
    (error: unknown) =>
      error instanceof ConfigError && error.issues.some((issue) => issue.variable === 'HOST'),
  );
});

test('the gateway and the worker metrics endpoint bind HOST, 127.0.0.1 when it is unset', async () => {
  for (const env of [base, { ...base, HOST: '127.0.0.1' }]) {
    const config = loadConfig(env);
    // Neither the pool nor the client connects until used: nothing here reaches 127.0.0.1:1.
    const pool = createPool(config.databaseUrl);
    const client = await connectClient(config);
    const { app } = await startGateway({ config, pool, client });
    const metrics = await startMetricsServer({ port: 0, host: config.host });
    try {
      assert.equal((app.server.address() as AddressInfo).address, '127.0.0.1');
      assert.equal((metrics.server.address() as AddressInfo).address, '127.0.0.1');
    } finally {
      await app.close();
      await metrics.close();
      await pool.end();
    }
  }
  const unset = await startMetricsServer({ port: 0 });
  assert.equal((unset.server.address() as AddressInfo).address, '127.0.0.1');
  await unset.close();
});
