/**
 * `npm test`: installs what the suite needs (the Temporal binaries), starts one real PostgreSQL
 * (embedded, unless DATABASE_URL names one) and one Temporal dev server shared by the test files,
 * runs `node --test`, and stops both. Each test file makes its own database and task queue.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/lib/free-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/stack/embedded-postgres';
import { findTemporalCli, findTemporalTestServer } from '../src/stack/temporal-binaries';
import { startTemporalDevServer, type DevServer } from '../src/stack/temporal-dev-server';

async function main() {
  const started = Date.now();
  const files = selectTestFiles(process.argv.slice(2));
  const [cliPath, testServerPath] = await Promise.all([findTemporalCli(), findTemporalTestServer()]);

  let database: EmbeddedDatabase | undefined;
  let scratch: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    scratch = mkdtempSync(join(tmpdir(), 'settle-test-'));
    database = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
    adminUrl = database.urlFor('postgres');
  }
  let temporal: DevServer | undefined;
  const stopAll = async () => {
    await temporal?.stop();
    await database?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  };
  try {
    temporal = await startTemporalDevServer({ cliPath, port: await freePort() });
    process.stderr.write(`settle tests: services ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    const code = await runNodeTest(files, {
      ...process.env,
      SETTLE_TEST_ADMIN_DATABASE_URL: adminUrl,
      TEMPORAL_ADDRESS: temporal.address,
      SETTLE_TEMPORAL_CLI: cliPath,
      SETTLE_TEMPORAL_TEST_SERVER: testServerPath,
      SETTLE_LOG_LEVEL: process.env.SETTLE_LOG_LEVEL ?? 'warn',
    });
    process.exitCode = code;
  } finally {
    await stopAll();
  }
}

function selectTestFiles(filters: string[]): string[] {
  const all = readdirSync('test')
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => join('test', name));
  const chosen = filters.length ? all.filter((file) => filters.some((filter) => file.includes(filter))) : all;
  if (!chosen.length) throw new Error(`no test file matches ${filters.join(' ')}`);
  return chosen;
}

function runNodeTest(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
      { stdio: 'inherit', env },
    );
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
