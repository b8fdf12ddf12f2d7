/**
 * `npm run monitoring:check`: `promtool check rules` and `promtool test rules` on deploy/monitoring/,
 * and the dashboard's JSON read. promtool is built once from the Go module proxy at a pinned version
 * into `.tools/promtool-<version>/` (minutes on a fresh machine), like testkit/binaries.ts builds the
 * Temporal server, and reused after.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';

/** Prometheus v3.x's module version (v0.316.0 is Prometheus 3.16); the newest that builds here. */
export const PROMTOOL_VERSION = '0.316.0';
const MONITORING = join(PROJECT_ROOT, 'deploy', 'monitoring');

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')}: exit ${code ?? signal}`)),
    );
  });
}

/** The path of promtool, built into .tools/ when missing (a folder counts once `.complete` is written). */
export async function ensurePromtool(): Promise<string> {
  const dir = join(PROJECT_ROOT, '.tools', `promtool-${PROMTOOL_VERSION}`);
  const binary = join(dir, 'bin', 'promtool');
  if (existsSync(join(dir, '.complete'))) return binary;
  const work = `${dir}.partial-${process.pid}`;
  const cwd = mkdtempSync(join(tmpdir(), 'settle-go-'));
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'bin'), { recursive: true });
  process.stderr.write(
    `monitoring: building promtool v${PROMTOOL_VERSION} (once; minutes on a fresh machine)\n`,
  );
  try {
    await run('go', ['install', `github.com/prometheus/prometheus/cmd/promtool@v${PROMTOOL_VERSION}`], {
      cwd,
      env: { ...process.env, GOFLAGS: '-mod=mod', GOBIN: join(work, 'bin'), CGO_ENABLED: '0' },
    });
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
    writeFileSync(join(dir, '.complete'), `${new Date().toISOString()}\n`);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

async function main() {
  JSON.parse(readFileSync(join(MONITORING, 'settle-dashboard.json'), 'utf8'));
  const promtool = await ensurePromtool();
  await run(promtool, ['check', 'rules', 'settle-alerts.yml'], { cwd: MONITORING });
  await run(promtool, ['test', 'rules', 'settle-alerts.test.yml'], { cwd: MONITORING });
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`monitoring:check: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
