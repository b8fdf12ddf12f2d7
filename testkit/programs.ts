import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { childHandle, sleep, type Child } from './processes';
import { freePort } from './free-port';

/**
 * Runs a program (a Temporal service, the UI server, a setup script) as a child process whose
 * output goes to `logFile` (and the end of it to memory, for error messages). Resolves once
 * `ready()` is true; rejects with the output's end if it exits first or `timeoutMs` passes.
 */
export async function startProgram(options: {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  logFile: string;
  ready?: (child: Child) => Promise<boolean>;
  timeoutMs?: number;
  cwd?: string;
  /** Called with the handle as soon as the process exists (so an interrupted run can stop it). */
  onSpawn?: (child: Child) => void;
}): Promise<Child> {
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const child = spawn(options.command, options.args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const collect = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString()).slice(-6_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (error) => {
      tail += `\n${error.message}`;
      resolve('spawn-error');
    });
    child.once('exit', (code, signal) => {
      log.end();
      resolve(code ?? signal ?? 'unknown');
    });
  });
  const handle = childHandle(
    options.name,
    child,
    exited,
    () => tail,
    () => tail,
  );
  options.onSpawn?.(handle);
  if (!options.ready) return handle;
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  let gone = false;
  void exited.then(() => (gone = true));
  for (;;) {
    if (await options.ready(handle)) return handle;
    if (gone)
      throw new Error(`${options.name} exited (${await exited}) before it was ready:\n${tail.trim()}`);
    if (Date.now() > deadline) {
      await handle.kill();
      throw new Error(
        `${options.name} was not ready within ${options.timeoutMs ?? 120_000} ms:\n${tail.trim()}`,
      );
    }
    await sleep(250);
  }
}

/** Runs a program to completion; resolves with its output, rejects (with it) on a non-zero exit. */
export async function runProgram(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<string> {
  const child = await startProgram({ name, command, args, env, logFile });
  const how = await child.exited;
  if (how !== 0) throw new Error(`${name} failed (${how}):\n${child.output().trim()}`);
  return child.output();
}

/** True once something accepts TCP connections on 127.0.0.1:`port`. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Free ports for one run, never the same twice. Membership ports come from 20000–32767: Temporal's
 * PostgreSQL schema stores them as SMALLINT, and the OS's ephemeral range lies above it.
 */
export class PortPicker {
  private readonly taken = new Set<number>();

  async any(): Promise<number> {
    for (;;) {
      const port = await freePort();
      if (!this.taken.has(port)) {
        this.taken.add(port);
        return port;
      }
    }
  }

  async membership(): Promise<number> {
    for (;;) {
      const port = 20_000 + Math.floor(Math.random() * (32_767 - 20_000 + 1));
      if (!this.taken.has(port) && (await canBind(port))) {
        this.taken.add(port);
        return port;
      }
    }
  }
}

/**
 * Polls `probe` until `done(value)` holds and answers that value; past `timeoutMs` (a bound on a
 * hang, not a pace) it throws naming `what` and the last value seen.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs / 1000} s (last seen: ${describe(value)})`);
    await sleep(250);
  }
}

const describe = (value: unknown) =>
  Array.isArray(value) ? `${value.length} items` : JSON.stringify(value)?.slice(0, 300);
