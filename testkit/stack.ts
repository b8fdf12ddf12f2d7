import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../src/client';
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { parsePayloadKeys, type PayloadKey } from '../src/config/payload-keys';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { freePort } from './free-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/stack/embedded-postgres';
import { findTemporalCli } from '../src/stack/temporal-binaries';
import { startTemporalDevServer, type DevServer } from '../src/stack/temporal-dev-server';
import { TemporalCluster } from './cluster';
import { sleep, spawnTs, WORKER_PROCESS, type Child } from './processes';
import { RecordingReceiver, targetUrlVariables } from './receiver';

/**
 * SETTLE_OUTBOUND_SECRET of every settle process this process starts: the workers sign each carrier
 * and ERP call with it, and the recording receivers verify with it.
 */
export const PROOF_OUTBOUND_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** SETTLE_REMINDER_SECRET of the same processes: the reminders' own signing secret. */
export const PROOF_REMINDER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** This process's environment without settle's, Temporal's and OpenTelemetry's variables: a child's base. */
export const inheritedEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(SETTLE|TEMPORAL|OTEL)_/.test(key)));

/**
 * What every settle process of a proof run (bench, chaos, topology) reads besides Temporal's address:
 * its PostgreSQL and task queue, the secrets, and the recording receiver as every delivery target.
 */
export function settleProcessEnv(run: {
  databaseUrl: string;
  taskQueue: string;
  secret: string;
  apiToken: string;
  receiverUrl: string;
  scratch: string;
  logLevel: string;
  /** SETTLE_PAYLOAD_KEYS: every settle process of a run encrypts its payloads, as production does. */
  payloadKeys: string;
}): Record<string, string> {
  return {
    SETTLE_PAYLOAD_KEYS: run.payloadKeys,
    DATABASE_URL: run.databaseUrl,
    SETTLE_TASK_QUEUE: run.taskQueue,
    SETTLE_WEBHOOK_SECRETS: run.secret,
    SETTLE_API_TOKEN: run.apiToken,
    SETTLE_OUTBOUND_SECRET: PROOF_OUTBOUND_SECRET,
    SETTLE_REMINDER_SECRET: PROOF_REMINDER_SECRET,
    ...targetUrlVariables(run.receiverUrl),
    SETTLE_ALLOW_PRIVATE_TARGETS: 'true',
    SETTLE_METRICS_PORT: '0',
    SETTLE_LOG_LEVEL: run.logLevel,
    SETTLE_HOME: join(run.scratch, 'home'),
  };
}

/**
 * Everything on this machine, on loopback, in a scratch folder: an embedded PostgreSQL and a Temporal
 * dev server on a SQLite file (both restartable on the same data, for the fault-injection suite), a
 * recording downstream receiver in this process, and settle's gateway and workers as child processes
 * started from the ordinary settle environment.
 */
export class ProofStack {
  readonly scratch = mkdtempSync(join(tmpdir(), 'settle-proof-'));
  readonly secret = `whsec_${randomBytes(24).toString('base64')}`;
  readonly apiToken = randomBytes(24).toString('hex');
  readonly taskQueue = 'settle';
  /** One key of the run's own (SETTLE_PAYLOAD_KEYS); a row turns encryption off with an empty value. */
  readonly payloadKeys = `proof-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`;
  // One receiver stands for the carrier, the ERP and the reminders' customers: it knows both secrets.
  readonly receiver = new RecordingReceiver(undefined, [PROOF_OUTBOUND_SECRET, PROOF_REMINDER_SECRET]);
  postgres!: EmbeddedDatabase;
  temporal!: DevServer;
  pool!: pg.Pool;
  client!: Client;
  databaseUrl = '';
  gateway: Child | undefined;
  gatewayUrl = '';
  readonly workers: Child[] = [];
  private cliPath = '';
  private closing = false;
  private postgresPort = 0;
  private temporalPort = 0;
  private gatewayPort = 0;
  /** With `server: 'cluster'`: the topology's real Temporal server (testkit/cluster.ts). */
  cluster: TemporalCluster | undefined;

  /**
   * `server`: `dev` (default), the Temporal dev server on a SQLite file; `cluster`, the real server
   * `npm run topology` runs (four services on their own PostgreSQL, no TLS, namespace `default`).
   */
  constructor(
    readonly options: {
      server?: 'dev' | 'cluster';
      /** More settings for the embedded PostgreSQL (e.g. `shared_preload_libraries` for a profile). */
      postgresSettings?: Record<string, string>;
    } = {},
  ) {}

  async start(): Promise<void> {
    // Interrupted (Ctrl-C, a CI timeout): stop every server and child this stack started, then exit.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => void this.close().finally(() => process.exit(130)));
    }
    this.cliPath = await findTemporalCli();
    this.postgresPort = await freePort();
    this.temporalPort = await freePort();
    await this.startPostgres();
    await this.postgres.createDatabase('settle');
    this.databaseUrl = this.postgres.urlFor('settle');
    this.pool = createPool(this.databaseUrl, { max: 30 });
    await migrate(this.pool);
    await this.startTemporal();
    this.client = await connectClient({
      temporalAddress: this.temporal.address,
      temporalNamespace: 'default',
      payloadKeys: proofKeys(this.payloadKeys),
    });
    await this.receiver.start();
  }

  async startPostgres(): Promise<void> {
    this.postgres = await startEmbeddedPostgres({
      dataDir: join(this.scratch, 'pg'),
      port: this.postgresPort,
      ...(this.options.postgresSettings ? { settings: this.options.postgresSettings } : {}),
    });
  }

  /** Immediate shutdown (SIGQUIT to the postmaster): open transactions die without a clean close. */
  async crashPostgres(): Promise<void> {
    const pid = Number(readFileSync(join(this.scratch, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGQUIT');
    for (let i = 0; i < 100; i += 1) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await sleep(100);
    }
    throw new Error('PostgreSQL did not stop');
  }

  async startTemporal(): Promise<void> {
    if (this.options.server === 'cluster') {
      const cluster = (this.cluster ??= new TemporalCluster({
        scratch: join(this.scratch, 'cluster'),
        tls: false,
        namespace: 'default',
        log: (line) => process.stderr.write(`cluster: ${line}\n`),
      }));
      await cluster.start();
      const frontend = cluster.services.get('frontend')!;
      this.temporal = {
        address: cluster.address,
        uiUrl: cluster.uiUrl,
        process: frontend.process,
        stop: () => cluster.stop(),
        kill: async () => {
          await Promise.all([...cluster.services.values()].map((service) => service.kill()));
          await cluster.postgres.stop().catch(() => {});
        },
      };
      return;
    }
    this.temporal = await startTemporalDevServer({
      cliPath: this.cliPath,
      port: this.temporalPort,
      ...temporalStorage(this.scratch),
    });
  }

  /**
   * Makes Temporal forget every run, as namespace retention does: SIGKILL the dev server, delete its
   * database file and start it again, empty, on the same address. Workers and clients reconnect.
   */
  async wipeTemporal(): Promise<void> {
    await this.temporal.kill();
    for (const suffix of ['', '-wal', '-shm'])
      rmSync(join(this.scratch, `temporal.db${suffix}`), { force: true });
    await this.startTemporal();
  }

  /** The environment a settle process of this stack reads. */
  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
      ...process.env,
      TEMPORAL_ADDRESS: this.temporal.address,
      ...settleProcessEnv({
        databaseUrl: this.databaseUrl,
        taskQueue: this.taskQueue,
        secret: this.secret,
        apiToken: this.apiToken,
        scratch: this.scratch,
        receiverUrl: this.receiver.url,
        payloadKeys: this.payloadKeys,
        // Request logs at info cost the gateway a JSON line per request; the figures are for warn.
        logLevel: process.env.SETTLE_LOG_LEVEL ?? 'warn',
      }),
      ...extra,
    };
  }

  /** `settle gateway`, the production entry point, on a fixed port (kept across restarts). */
  async startGateway(nodeArgs: string[] = []): Promise<Child> {
    this.gatewayPort ||= await freePort();
    this.gatewayUrl = `http://127.0.0.1:${this.gatewayPort}`;
    const url = this.gatewayUrl;
    this.gateway = await spawnTs(
      'gateway',
      [...nodeArgs, 'src/cli/main.ts', 'gateway'],
      this.env({ PORT: String(this.gatewayPort) }),
      async () => {
        try {
          return (await fetch(`${url}/healthz`)).ok;
        } catch {
          return false;
        }
      },
    );
    const gateway = this.gateway;
    void gateway.exited.then((how) => {
      if (!this.closing) process.stderr.write(`the gateway exited (${how}) unasked:\n${gateway.errors()}\n`);
    });
    return gateway;
  }

  /**
   * `settle serve` (a gateway and a worker in one process, payment runs started eagerly) on a task
   * queue of its own, so only its worker runs what its gateway starts. Resolves with the process and
   * its gateway's URL once /healthz answers.
   */
  async startServe(
    extra: Record<string, string> = {},
    nodeArgs: string[] = [],
  ): Promise<{ child: Child; gatewayUrl: string }> {
    const port = await freePort();
    const gatewayUrl = `http://127.0.0.1:${port}`;
    const child = await spawnTs(
      'serve',
      [...nodeArgs, 'src/cli/main.ts', 'serve'],
      this.env({ PORT: String(port), SETTLE_TASK_QUEUE: `${this.taskQueue}-serve`, ...extra }),
      async () => (await fetch(`${gatewayUrl}/healthz`).catch(() => undefined))?.ok === true,
    );
    return { child, gatewayUrl };
  }

  /** This stack as seen through another gateway (`settle serve`'s): the rows post there instead. */
  throughGateway(gatewayUrl: string): ProofStack {
    return Object.create(this, { gatewayUrl: { value: gatewayUrl } }) as ProofStack;
  }

  /**
   * A worker process (testkit/worker-process.ts); `extra` adds to its environment, `nodeArgs`
   * to Node's command line (flags NODE_OPTIONS refuses, such as --cpu-prof).
   */
  async startWorker(extra: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Child> {
    const worker = await spawnTs(
      `worker-${this.workers.length + 1}`,
      [...nodeArgs, WORKER_PROCESS],
      this.env(extra),
      (output) => output.includes('worker ready'),
    );
    this.workers.push(worker);
    void worker.exited.then((how) => {
      if (typeof how === 'number' && how !== 0) {
        process.stderr.write(`${worker.name} crashed (exit ${how}):\n${worker.errors()}\n`);
      }
    });
    void worker.exited.then(() => this.workers.splice(this.workers.indexOf(worker) >>> 0, 1));
    return worker;
  }

  async stopWorkers(): Promise<void> {
    await Promise.all([...this.workers].map((worker) => worker.stop()));
  }

  /**
   * Pids of the Temporal server's processes, for resource sampling: `temporal` (the dev server) or,
   * for a cluster, `temporal-<service>` for each of its four services and `temporal-postgres`.
   */
  temporalPids(): Record<string, number | undefined> {
    if (!this.cluster) return { temporal: this.temporal?.process.pid };
    const pid = (service: 'frontend' | 'history' | 'matching' | 'worker') =>
      this.cluster!.services.get(service)?.pid;
    return {
      'temporal-frontend': pid('frontend'),
      'temporal-history': pid('history'),
      'temporal-matching': pid('matching'),
      'temporal-worker': pid('worker'),
      'temporal-postgres': this.cluster.postgresPid(),
    };
  }

  /** Pid of the postmaster, for resource sampling. */
  postgresPid(): number | undefined {
    try {
      return Number(readFileSync(join(this.scratch, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.gateway?.stop().catch(() => {});
    await this.stopWorkers().catch(() => {});
    await this.client?.connection.close().catch(() => {});
    await this.pool?.end().catch(() => {});
    await this.receiver.close();
    await this.temporal?.stop().catch(() => {});
    await this.postgres?.stop().catch(() => {});
    rmSync(this.scratch, { recursive: true, force: true });
  }
}

/**
 * Where the dev server keeps its history (SETTLE_PROOF_TEMPORAL_DB): `file`, a SQLite file with the
 * CLI's default pragmas (what `npm start` runs); `wal-full`, the same file in WAL mode with
 * synchronous=FULL (as durable: every commit is fsynced); `wal` (the default here), WAL with
 * synchronous=NORMAL (survives a SIGKILL of the server, as chaos scenario 6 shows, but not a power
 * cut); or `memory`. docs/performance.md has what each costs.
 */
function temporalStorage(scratch: string): { dbFile?: string; sqlitePragmas?: string[] } {
  const mode = process.env.SETTLE_PROOF_TEMPORAL_DB ?? 'wal';
  if (mode === 'memory') return {};
  const pragmas: Record<string, string[]> = {
    file: [],
    'wal-full': ['journal_mode=wal', 'synchronous=full'],
    wal: ['journal_mode=wal', 'synchronous=normal'],
  };
  if (!pragmas[mode]) throw new Error('SETTLE_PROOF_TEMPORAL_DB must be file, wal-full, wal or memory');
  return { dbFile: join(scratch, 'temporal.db'), sqlitePragmas: pragmas[mode] };
}

function proofKeys(spec: string): PayloadKey[] {
  const parsed = parsePayloadKeys(spec);
  if ('problem' in parsed) throw new Error(`proof payload keys: ${parsed.problem}`);
  return parsed.keys;
}
