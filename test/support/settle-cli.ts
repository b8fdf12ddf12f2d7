import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';
import type { TestStack } from './harness';

export type CliRun = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** The environment a production process of this test stack would get, with its own empty state folder. */
export function stackEnv(stack: TestStack, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.config.temporalAddress,
    TEMPORAL_NAMESPACE: stack.config.temporalNamespace,
    SETTLE_TASK_QUEUE: stack.taskQueue,
    SETTLE_WEBHOOK_SECRETS: stack.secret,
    SETTLE_API_TOKEN: stack.apiToken,
    // `settle worker` refuses to start without its downstream targets and a secret to sign calls with.
    SETTLE_OUTBOUND_SECRET: stack.config.outboundSecret.join(','),
    ...(stack.config.carrierUrl ? { SETTLE_CARRIER_URL: stack.config.carrierUrl } : {}),
    ...(stack.config.erpUrl ? { SETTLE_ERP_URL: stack.config.erpUrl } : {}),
    SETTLE_HOME: mkdtempSync(join(tmpdir(), 'settle-home-')),
    // What production runs at (the suite itself runs quieter).
    SETTLE_LOG_LEVEL: 'info',
    ...extra,
  };
}

/**
 * Starts a command as a person would type it (in a fresh empty folder unless `cwd` says otherwise);
 * the caller reads or signals it. The one way test/ runs a command line.
 */
export function spawnCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): ChildProcessWithoutNullStreams {
  return spawn(command, args, {
    cwd: cwd ?? mkdtempSync(join(tmpdir(), 'settle-cwd-')),
    env: { ...process.env, ...env },
  });
}

/** Starts `node bin/settle.js …`; see spawnCommand. */
export function spawnSettle(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): ChildProcessWithoutNullStreams {
  return spawnCommand(process.execPath, [join(PROJECT_ROOT, 'bin/settle.js'), ...args], env, cwd);
}

/**
 * Waits for a spawned command to exit, collecting its output. The default bound is on a hang: a CLI
 * process's start alone (tsx, the config, a Temporal connection) took 30 to 60 s under load 30 on 2 cores.
 */
export function finished(child: ChildProcessWithoutNullStreams, timeoutMs = 300_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${child.spawnargs.join(' ')} timed out after ${timeoutMs / 1000} s; its output:\n${stdout}\n${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export function runSettle(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs?: number,
  cwd?: string,
): Promise<CliRun> {
  return finished(spawnSettle(args, env, cwd), timeoutMs);
}

export function runCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<CliRun> {
  return finished(spawnCommand(command, args, env, options.cwd), options.timeoutMs);
}
