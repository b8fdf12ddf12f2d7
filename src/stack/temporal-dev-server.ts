import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SETTLE_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

export type DevServer = {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after a grace period. */
  /** SIGTERM, then SIGKILL after `graceMs` (10 s unless given). */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once, as a crash would. */
  kill(): Promise<void>;
};

export type DevServerOptions = {
  cliPath: string;
  port: number;
  /** Omit for a headless server. */
  uiPort?: number;
  /** The UI's remote codec endpoint (`--ui-codec-endpoint`): the UI decodes payloads through it. */
  uiCodecEndpoint?: string;
  /** SQLite file that keeps history across restarts; omit for in-memory. */
  dbFile?: string;
  /** `PRAGMA=VALUE` for that file, e.g. `journal_mode=wal` (see docs/performance.md). */
  sqlitePragmas?: string[];
  namespace?: string;
  /** False: a server without settle's search attributes, as a real cluster is before `settle migrate`. */
  registerSearchAttributes?: boolean;
  /** Lines of the server's own output go here (it is not JSON and may name workflow IDs). */
  onOutput?: (line: string) => void;
  /** More `--dynamic-config-value` settings, `key=value` each. */
  dynamicConfig?: string[];
};

const DRAINAGE_REFRESH = [
  'matching.wv.VersionDrainageStatusRefreshInterval="2s"',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod="2s"',
];

/**
 * Starts `temporal server start-dev` and resolves once its frontend answers. settle's search
 * attributes are registered on every start (the flag is idempotent on a persisted database), so every
 * dev server settle runs (`npm start`, the tests, bench and chaos) accepts the runs that set them.
 */
export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServer> {
  const address = `127.0.0.1:${options.port}`;
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--namespace',
    options.namespace ?? 'default',
    '--log-level',
    'error',
    ...(options.uiPort ? ['--ui-port', String(options.uiPort)] : ['--headless']),
    ...(options.uiPort && options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
    ...(options.sqlitePragmas ?? []).flatMap((pragma) => ['--sqlite-pragma', pragma]),
    // A Worker Deployment Version's drainage is rechecked every few seconds rather than every 3 minutes
    // after a 3-minute grace period, so `settle deployment describe` shows DRAINED as soon as it is.
    ...[...DRAINAGE_REFRESH, ...(options.dynamicConfig ?? [])].flatMap((setting) => [
      '--dynamic-config-value',
      setting,
    ]),
    ...(options.registerSearchAttributes === false
      ? []
      : SETTLE_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`])),
  ];
  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-4000);
    for (const line of text.split('\n')) if (line.trim()) options.onOutput?.(line);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Whatever ends this process (a forced exit at the shutdown deadline included), the server ends too.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));

  const waitForExit = async (signal: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const server: DevServer = {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    process: child,
    stop: (graceMs = 10_000) => waitForExit('SIGTERM', graceMs),
    kill: () => waitForExit('SIGKILL', 0),
  };

  const deadline = Date.now() + 60_000;
  let earlyExit = false;
  void exited.then(() => (earlyExit = true));
  while (Date.now() < deadline && !earlyExit) {
    if (await answers(address, options.namespace ?? 'default')) return server;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await server.stop();
  throw new Error(`The Temporal dev server on ${address} did not start:\n${output.trim()}`);
}

async function answers(address: string, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1_000 });
    await connection.withDeadline(Date.now() + 1_000, () =>
      connection!.workflowService.describeNamespace({ namespace }),
    );
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => {});
  }
}
