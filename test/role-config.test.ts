/**
 * `settle worker` and `settle gateway` are production processes: configured by their environment
 * alone, even in a folder where `npm start` left its development secrets and a running stack.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runSettle } from './support/settle-cli';

/** A folder like one `npm start` runs in: development secrets and a live stack (this process). */
function devFolder(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'settle-role-'));
  mkdirSync(join(cwd, '.settle'));
  writeFileSync(
    join(cwd, '.settle', 'dev-secrets.json'),
    JSON.stringify({
      webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      apiToken: 'dev-token-0123456789abcdef',
      outboundSecret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
    }),
  );
  writeFileSync(
    join(cwd, '.settle', 'stack.json'),
    JSON.stringify({
      pid: process.pid,
      databaseUrl: 'postgres://settle@127.0.0.1:1/settle',
      temporalAddress: '127.0.0.1:1',
      temporalUiUrl: null,
      gatewayUrl: 'http://127.0.0.1:1',
      namespace: 'default',
      taskQueue: 'settle',
    }),
  );
  return cwd;
}

/** Whatever the test process has (npm test sets TEMPORAL_ADDRESS), unset: an empty value is unset. */
const UNSET = { DATABASE_URL: '', TEMPORAL_ADDRESS: '', SETTLE_HOME: '', SETTLE_WEBHOOK_SECRETS: '' };

describe('production roles and .settle/', () => {
  test('settle gateway without SETTLE_WEBHOOK_SECRETS stops naming it, development secrets beside it', async () => {
    const run = await runSettle(
      ['gateway'],
      {
        ...UNSET,
        DATABASE_URL: 'postgres://settle@127.0.0.1:1/settle',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        PORT: '0',
      },
      300_000,
      devFolder(),
    );
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^settle: SETTLE_WEBHOOK_SECRETS is not set/m);
  });

  test("settle worker without DATABASE_URL stops naming it, not using the folder's running stack", async () => {
    const run = await runSettle(
      ['worker'],
      {
        ...UNSET,
        SETTLE_CARRIER_URL: 'http://127.0.0.1:1/carrier',
        SETTLE_ERP_URL: 'http://127.0.0.1:1/erp',
      },
      300_000,
      devFolder(),
    );
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^ {2}DATABASE_URL: is not set$/m);
    assert.match(run.stderr, /^ {2}TEMPORAL_ADDRESS: is not set$/m);
  });

  test('a bad SETTLE_LOG_LEVEL stops any command at once, naming it', async () => {
    const run = await runSettle(['inspect', 'pay_1'], { ...UNSET, SETTLE_LOG_LEVEL: 'loud' }, 300_000);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^ {2}SETTLE_LOG_LEVEL: must be one of/m);
  });
});
