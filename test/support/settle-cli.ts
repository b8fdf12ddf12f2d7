import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configVariables, settingsVariables } from '../../src/config/schema';
import { DELIVERY_TARGETS, OUTBOX_TARGETS, targetUrl } from '../../src/domain/outbox';
import { freePorts } from '../../testkit/free-port';
import { PROJECT_ROOT } from '../../src/lib/paths';
import type { TestStack } from '../../testkit/harness';

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
    SETTLE_REMINDER_SECRET: stack.config.reminderSecret.join(','),
    ...Object.fromEntries(
      OUTBOX_TARGETS.flatMap((target) => {
        const url = targetUrl(stack.config, target);
        return url ? [[DELIVERY_TARGETS[target].variable, url]] : [];
      }),
    ),
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

/** `settle import --json` of a report holding `events`, one a line, written to a directory of its own. */
export async function importEvents(events: unknown[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
  try {
    const file = join(dir, 'report.jsonl');
    writeFileSync(file, `${events.map((event) => JSON.stringify(event)).join('\n')}\n`);
    return await runSettle(['import', file, '--json'], env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function runCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<CliRun> {
  return finished(spawnCommand(command, args, env, options.cwd), options.timeoutMs);
}

/**
 * A free port for every listening-port variable settle reads (each `*_PORT` of the configuration
 * schema: the gateway's, the codec server's, the worker's metrics, the one-machine stack's), all
 * different. A test that starts `settle start` or a role takes the whole set, so a listener added
 * later (it gets a `*_PORT` variable) is covered without touching the test.
 */
export async function listenPortEnv(): Promise<Record<string, string>> {
  const names = [...Object.values(configVariables), ...Object.values(settingsVariables)]
    .map((variable) => variable.name)
    .filter((name) => /(^|_)PORT$/.test(name));
  const ports = await freePorts(names.length);
  return Object.fromEntries(names.map((name, index) => [name, String(ports[index])]));
}

/**
 * Collects a long-running child's combined output; `waitForOutput` waits for the output to satisfy
 * `ready`, and fails at once, with the child's last output, when the child exits first (a process
 * that died at start is not waited on for the whole bound).
 */
export function watchOutput(child: ChildProcessWithoutNullStreams) {
  let text = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve();
    }),
  );
  return {
    get text() {
      return text;
    },
    exited,
    async waitForOutput(
      what: string,
      ready: (output: string) => boolean,
      timeoutMs = 300_000,
    ): Promise<void> {
      const started = Date.now();
      while (!ready(text)) {
        if (exit)
          throw new Error(
            `${child.spawnargs.join(' ')} exited (code ${exit.code}, signal ${exit.signal}) before ${what}; ` +
              `its last output:\n${text.slice(-3000)}`,
          );
        if (Date.now() - started > timeoutMs)
          throw new Error(
            `timed out after ${timeoutMs / 1000} s waiting for ${what}; its last output:\n${text.slice(-3000)}`,
          );
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 100))]);
      }
    },
  };
}
