/**
 * `npm run monitoring:check`: `promtool check rules` and `promtool test rules` on deploy/monitoring/,
 * and the dashboard's JSON read. promtool is built once from the Go module proxy at a pinned version
 * into `.tools/promtool-<version>/` and reused after.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { runMain } from '../../testkit/checks';
import { buildInto, goRun } from '../../testkit/binaries';

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

/** The path of promtool, built into .tools/ once (testkit/binaries.ts). */
export async function ensurePromtool(): Promise<string> {
  const dir = join(PROJECT_ROOT, '.tools', `promtool-${PROMTOOL_VERSION}`);
  const target = `github.com/prometheus/prometheus/cmd/promtool@v${PROMTOOL_VERSION}`;
  const log = (line: string) => process.stderr.write(`monitoring: ${line}\n`);
  if (!existsSync(join(dir, '.complete')))
    await buildInto(dir, log, (go) => goRun(go, ['install', target], log));
  return join(dir, 'bin', 'promtool');
}

async function main() {
  JSON.parse(readFileSync(join(MONITORING, 'settle-dashboard.json'), 'utf8'));
  const promtool = await ensurePromtool();
  await run(promtool, ['check', 'rules', 'settle-alerts.yml'], { cwd: MONITORING });
  await run(promtool, ['test', 'rules', 'settle-alerts.test.yml'], { cwd: MONITORING });
}

if (require.main === module) runMain('monitoring:check', main);
