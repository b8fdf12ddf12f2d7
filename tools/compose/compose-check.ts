/**
 * `npm run compose:check [-- --no-tls] [-- --keep-logs] [-- --prepare]`: docker-compose.yml run as a
 * user runs it, then checked (docs/compose.md; tools/README.md says what it proves). First the engine,
 * the Compose plugin and the images (compose-engine.ts); then for docker-compose.yml, and again with
 * docker-compose.tls.yml on top, a project of its own on free host ports: up and healthy, settle's
 * containers as the Kubernetes manifests run them, signed events through worker faults applied once,
 * the UI, a whole trace in Jaeger, payloads encrypted and decoded by the codec server for its token
 * only, `docker stop` of a busy gateway and worker; `docker compose down -v` always, on SIGINT too.
 * Each check prints PASS or FAIL; the last line is "N passed, M failed"; any failure exits non-zero.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { build } from 'esbuild';
import pg from 'pg';
import { checkInvariants } from '../../testkit/invariants';
import { storedHistoryIsEncrypted } from '../../testkit/codec-check';
import { Provider } from '../../testkit/provider';
import { cappedLoad, makeEvent, newRunId, shipmentFor } from '../../testkit/load';
import { addShipments } from '../../src/db/shipments';
import { createPool } from '../../src/db/pool';
import { paymentWorkflowId } from '../../src/domain/ids';
import { freePorts } from '../../testkit/free-port';
import { shortHash } from '../../src/lib/hash';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { targetUrlVariables, type KeyRecord, type RecordingReceiver } from '../../testkit/receiver';
import { sleep } from '../../testkit/processes';
import { Checks, figuresText, runMain } from '../../testkit/checks';
import { tracedWebhookArrivesWhole } from '../../testkit/jaeger';
import { uiServes } from '../../testkit/ui-browser';
import { operatorClient } from '../../testkit/cluster';
import { inheritedEnv } from '../../testkit/stack';
import type { KeyRecordJson } from './compose-check-receiver';
import {
  buildSettleImage,
  ensureBaseImages,
  ensureCompose,
  ensureEngine,
  ensureThirdPartyImage,
  log,
  must,
  run,
  thirdPartyImages,
} from './compose-engine';

const withTls = !process.argv.includes('--no-tls');
const keepLogs = process.argv.includes('--keep-logs');
/**
 * `--prepare`: only what needs neither the Go builds nor a project (the engine, Compose, the base
 * images, settle's image layers); .ci/run starts it early in the background so it overlaps the tests.
 */
const prepareOnly = process.argv.includes('--prepare');
const COMPOSE_FILES = ['docker-compose.yml', 'docker-compose.tls.yml'];
const OVERRIDE = 'tools/compose/compose-check.override.yml';
const NAMESPACE = 'settle';
/** The one-shot jobs of docker-compose.yml (service_completed_successfully for their dependants). */
const ONE_SHOT = ['temporal-schema', 'temporal-namespace', 'migrate'];
/**
 * This run's tag of settle's image (docker-compose.yml's SETTLE_IMAGE): another check running beside
 * this one builds its own, so neither starts the other's; untagged at the end.
 */
const SETTLE_IMAGE = `settle:check-${process.pid}-${randomBytes(3).toString('hex')}`;
/**
 * The variables that choose the host ports the compose files (and the check's override) publish:
 * every `${VARIABLE…}:<container port>` in them, read from the files, so a port added there is picked
 * free too and never left at its default.
 */
const PUBLISHED_PORTS = [
  ...new Set(
    [...COMPOSE_FILES, OVERRIDE].flatMap((file) =>
      [...readFileSync(join(PROJECT_ROOT, file), 'utf8').matchAll(/\$\{(\w+_PORT)\b[^}]*\}:\d+/g)].map(
        (match) => match[1]!,
      ),
    ),
  ),
];
/** What Docker says when a published host port is held by something else. */
const PORT_TAKEN = /port is already allocated|address already in use/i;
/** settle's long-running containers. */
const SETTLE_SERVICES = ['gateway', 'worker-1', 'worker-2', 'codec-server'];
/** Signed events per second while the worker containers are killed and restarted. */
const RATE = 4;
/** Time for everything acknowledged to complete after the faults (a killed attempt waits 30 s). */
const SETTLE_TIMEOUT_MS = 300_000;
/** The worker's documented grace (stop_grace_period of docker-compose.yml's x-worker). */
const WORKER_GRACE_S = 60;

const checks = new Checks();
const check = checks.run.bind(checks);
const timings: string[] = [];

const seconds = (since: number) => Math.round((Date.now() - since) / 100) / 10;

/** What `docker compose ps --format json` says of a container. */
type PsEntry = { Service: string; State: string; Health: string; ExitCode: number; ID: string };

/** One compose project: the files, its environment (ports, secrets) and its scratch folder. */
class Project {
  readonly name = `settle-check-${process.pid}-${randomBytes(3).toString('hex')}`;
  readonly scratch = mkdtempSync(join(tmpdir(), 'settle-compose-check-'));
  readonly secret = `whsec_${randomBytes(24).toString('base64')}`;
  readonly apiToken = randomBytes(24).toString('hex');
  readonly codecToken = randomBytes(24).toString('hex');
  /** settle's own database role's password (PostgreSQL's superuser and Temporal's role have theirs). */
  readonly databasePassword = randomBytes(24).toString('hex');
  readonly ports: Record<string, number> = {};
  env: NodeJS.ProcessEnv = {};
  pool!: pg.Pool;
  client!: Client;
  private up = false;

  constructor(readonly tls: boolean) {}

  get files(): string[] {
    return [...(this.tls ? COMPOSE_FILES : COMPOSE_FILES.slice(0, 1)), OVERRIDE];
  }

  get gatewayUrl(): string {
    return `http://127.0.0.1:${this.ports.SETTLE_GATEWAY_PORT}`;
  }

  /** The codec server's published port, as this check reaches it. */
  get codecUrl(): string {
    return `http://127.0.0.1:${this.ports.SETTLE_CODEC_PORT}`;
  }

  /** A new set of host ports, all different, for every port variable the compose files publish. */
  private async pickPorts(): Promise<void> {
    const ports = await freePorts(PUBLISHED_PORTS.length);
    PUBLISHED_PORTS.forEach((variable, index) => {
      this.ports[variable] = ports[index]!;
      this.env[variable] = String(ports[index]);
    });
  }

  async prepare(receiverDir: string): Promise<void> {
    this.env = {
      ...inheritedEnv(),
      SETTLE_BIND_ADDRESS: '127.0.0.1',
      SETTLE_OPERATOR_BIND_ADDRESS: '127.0.0.1',
      SETTLE_POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
      SETTLE_DB_PASSWORD: this.databasePassword,
      TEMPORAL_DB_PASSWORD: randomBytes(24).toString('hex'),
      SETTLE_IMAGE,
      SETTLE_WEBHOOK_SECRETS: this.secret,
      SETTLE_API_TOKEN: this.apiToken,
      SETTLE_OUTBOUND_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
      SETTLE_REMINDER_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
      SETTLE_PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      SETTLE_CODEC_TOKEN: this.codecToken,
      ...targetUrlVariables('http://receiver:8080'),
      SETTLE_CHECK_RECEIVER_DIR: receiverDir,
      // Traces to the compose file's own Jaeger, as its header comment says to run it.
      COMPOSE_PROFILES: 'tracing',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318',
    };
    await this.pickPorts();
    if (this.tls) {
      const certs = join(this.scratch, 'tls');
      await must(process.execPath, ['--import', 'tsx', 'tools/topology/make-certs.ts', certs]);
      this.env.SETTLE_TLS_DIR = certs;
    }
  }

  compose(args: string[], timeoutMs = 120_000) {
    return run(
      'docker',
      ['compose', '-p', this.name, ...this.files.flatMap((file) => ['-f', file]), ...args],
      { env: this.env, timeoutMs },
    );
  }

  /**
   * `up -d`. A host port found free and then taken before Docker's proxy bound it (by anything on the
   * machine) fails the up: the project goes down and comes up again on new ports, a few times.
   */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      this.up = true;
      const ran = await this.compose(['up', '-d', '--quiet-pull'], 900_000);
      if (ran.code === 0) return;
      const output = `${ran.stdout}\n${ran.stderr}`;
      if (!PORT_TAKEN.test(output) || attempt >= 4) {
        const tail = output.trim().split('\n').slice(-30).join('\n');
        throw new Error(`docker compose up -d exited ${ran.code}:\n${tail}`);
      }
      log(`${this.name}: a published port was taken before it was bound (attempt ${attempt}); new ports`);
      await this.compose(['down', '-v', '--remove-orphans', '--timeout', '10'], 300_000);
      await this.pickPorts();
    }
  }

  async ps(): Promise<PsEntry[]> {
    const ran = await this.compose(['ps', '-a', '--format', 'json']);
    if (ran.code !== 0) throw new Error(`docker compose ps: ${ran.stderr.trim()}`);
    const text = ran.stdout.trim();
    if (!text) return [];
    // Compose prints one JSON object per line (older releases: one array).
    return text.startsWith('[')
      ? (JSON.parse(text) as PsEntry[])
      : text.split('\n').map((line) => JSON.parse(line) as PsEntry);
  }

  async container(service: string): Promise<string> {
    const id = (await this.compose(['ps', '-a', '-q', service])).stdout.trim().split('\n')[0];
    if (!id) throw new Error(`no container for ${service}`);
    return id;
  }

  async inspect<T>(service: string, format: string): Promise<T> {
    const ran = await must('docker', [
      'inspect',
      '--format',
      `{{json ${format}}}`,
      await this.container(service),
    ]);
    return JSON.parse(ran.stdout) as T;
  }

  /** settle's database and Temporal's frontend through their published ports. */
  async connect(): Promise<void> {
    this.pool = createPool(
      `postgres://settle:${this.databasePassword}@127.0.0.1:${this.ports.SETTLE_POSTGRES_PORT}/settle`,
      { max: 10 },
    );
    const certs = this.env.SETTLE_TLS_DIR;
    const keys = parsePayloadKeys(this.env.SETTLE_PAYLOAD_KEYS ?? '');
    this.client = await operatorClient({
      address: `127.0.0.1:${this.ports.SETTLE_TEMPORAL_PORT}`,
      namespace: NAMESPACE,
      tls: certs
        ? {
            serverName: 'temporal',
            ca: join(certs, 'ca.pem'),
            cert: join(certs, 'admin.pem'),
            key: join(certs, 'admin.key'),
          }
        : undefined,
      payloadKeys: 'keys' in keys ? keys.keys : [],
    });
  }

  /** What the receiver container recorded, one record per idempotency key. */
  async receiverRecords(): Promise<KeyRecordJson[]> {
    const response = await fetch(`http://127.0.0.1:${this.ports.SETTLE_CHECK_RECEIVER_PORT}/keys`);
    if (!response.ok) throw new Error(`the receiver's records answered ${response.status}`);
    return (await response.json()) as KeyRecordJson[];
  }

  /** What the receiver container recorded, per idempotency key. */
  async receiverKeys(): Promise<Map<string, KeyRecord>> {
    const records = await this.receiverRecords();
    return new Map(
      records.map((record) => [
        record.key,
        {
          requests: record.requests,
          applied: record.applied,
          repeatsRefused: record.repeatsRefused,
          bodies: new Set(record.bodies),
          arrivals: [],
          path: record.path,
        },
      ]),
    );
  }

  /** Logs of every service into the scratch folder (kept when a check failed). */
  async saveLogs(): Promise<void> {
    const ran = await this.compose(['logs', '--no-color', '--timestamps'], 120_000);
    mkdirSync(join(this.scratch, 'logs'), { recursive: true });
    writeFileSync(join(this.scratch, 'logs', 'compose.log'), `${ran.stdout}\n${ran.stderr}`);
  }

  private stopping: Promise<void> | undefined;

  /** `docker compose down -v` once; a second call (SIGINT during the first) waits for the same one. */
  down(): Promise<void> {
    this.stopping ??= (async () => {
      await this.client?.connection.close().catch(() => {});
      await this.pool?.end().catch(() => {});
      if (!this.up) return;
      const ran = await this.compose(['down', '-v', '--remove-orphans', '--timeout', '30'], 300_000);
      if (ran.code !== 0) log(`docker compose down -v for ${this.name} failed: ${ran.stderr.trim()}`);
    })();
    return this.stopping;
  }
}

/** Waits for every health check healthy and every one-shot job exited 0 (a failed one fails). */
async function waitHealthy(project: Project, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const entries = await project.ps();
    const failed = entries.filter(
      (entry) =>
        (ONE_SHOT.includes(entry.Service) && entry.State === 'exited' && entry.ExitCode !== 0) ||
        entry.Health === 'unhealthy' ||
        (!ONE_SHOT.includes(entry.Service) && entry.State === 'exited'),
    );
    const waiting = entries.filter((entry) =>
      ONE_SHOT.includes(entry.Service)
        ? entry.State !== 'exited'
        : entry.State !== 'running' || (entry.Health !== '' && entry.Health !== 'healthy'),
    );
    if (failed.length || !waiting.length || Date.now() > deadline) return { entries, failed, waiting };
    await sleep(2_000);
  }
}

/** The log tail of a service, for a failure message. */
async function tail(project: Project, service: string, lines = 15): Promise<string> {
  const ran = await project.compose(['logs', '--no-color', '--tail', String(lines), service]);
  return `${ran.stdout}${ran.stderr}`.trim().split('\n').slice(-lines).join('\n');
}

async function upAndHealthy(project: Project) {
  const started = Date.now();
  await project.start();
  const upSeconds = seconds(started);
  const { entries, failed, waiting } = await waitHealthy(project, 300_000);
  const failures: string[] = [];
  for (const entry of failed)
    failures.push(
      `${entry.Service} ${entry.State} (exit ${entry.ExitCode}, health ${entry.Health || 'none'}):\n${await tail(project, entry.Service)}`,
    );
  for (const entry of waiting.filter((e) => !failed.includes(e)))
    failures.push(`${entry.Service} still ${entry.State}/${entry.Health || 'no health check'} after 300 s`);
  const services = new Set(entries.map((entry) => entry.Service));
  for (const name of [...ONE_SHOT, 'postgres', 'temporal', 'temporal-ui', ...SETTLE_SERVICES])
    if (!services.has(name)) failures.push(`no container for ${name}`);
  const healthy = entries.filter((entry) => entry.Health === 'healthy').map((entry) => entry.Service);
  const total = seconds(started);
  timings.push(`${project.tls ? 'TLS' : 'plain'}: up -d ${upSeconds} s, all healthy ${total} s`);
  return {
    failures,
    detail: `up -d returned after ${upSeconds} s, all healthy after ${total} s; healthy: ${healthy.sort().join(', ')}; one-shots exited 0: ${ONE_SHOT.join(', ')}`,
  };
}

/** settle's containers as the Kubernetes manifests run its pods, and their probes. */
async function containerSettings(project: Project) {
  const failures: string[] = [];
  const facts: string[] = [];
  for (const service of SETTLE_SERVICES) {
    const user = await project.inspect<string>(service, '.Config.User');
    const readOnly = await project.inspect<boolean>(service, '.HostConfig.ReadonlyRootfs');
    const capDrop = (await project.inspect<string[] | null>(service, '.HostConfig.CapDrop')) ?? [];
    const securityOpt = (await project.inspect<string[] | null>(service, '.HostConfig.SecurityOpt')) ?? [];
    if (!readOnly) failures.push(`${service}: root filesystem is not read-only`);
    if (!capDrop.includes('ALL'))
      failures.push(`${service}: capabilities not dropped (${capDrop.join(',')})`);
    if (!securityOpt.some((option) => option.startsWith('no-new-privileges')))
      failures.push(`${service}: privilege escalation not disabled`);
    const nodeIn = async (code: string) =>
      run('docker', ['exec', await project.container(service), 'node', '-e', code]);
    const id = await nodeIn('process.stdout.write(String(process.getuid()))');
    if (id.code !== 0 || id.stdout.trim() === '0' || id.stdout.trim() === '')
      failures.push(`${service}: runs as uid ${id.stdout.trim() || '?'} (${id.stderr.trim()})`);
    const write = await nodeIn(
      "try{require('fs').writeFileSync('/app/.write-test','x');process.exit(3)}catch(e){process.stdout.write(e.code)}",
    );
    if (write.stdout.trim() !== 'EROFS')
      failures.push(`${service}: a write to /app did not fail with EROFS (${write.stdout}${write.stderr})`);
    const tmp = await nodeIn("require('fs').writeFileSync('/tmp/.write-test','x')");
    if (tmp.code !== 0) failures.push(`${service}: /tmp is not writable (${tmp.stderr.trim()})`);
    // PID 1 is settle's node with the image's V8 sizing (Dockerfile: the young generation at Node 20's size).
    const pid1 = await nodeIn(
      "process.stdout.write(require('fs').readFileSync('/proc/1/cmdline','utf8').split('\\0').join(' '))",
    );
    if (!/^node --max-semi-space-size=16 bin\/settle\.js /.test(pid1.stdout))
      failures.push(`${service}: PID 1 is not the image's entrypoint (${pid1.stdout}${pid1.stderr.trim()})`);
    facts.push(`${service} user ${user} uid ${id.stdout.trim()}`);
  }
  const probes: [string, string][] = [
    [`${project.gatewayUrl}/healthz`, 'gateway /healthz'],
    [`${project.gatewayUrl}/readyz`, 'gateway /readyz'],
    [`http://127.0.0.1:${project.ports.SETTLE_WORKER_1_METRICS_PORT}/healthz`, 'worker-1 /healthz'],
    [`http://127.0.0.1:${project.ports.SETTLE_WORKER_2_METRICS_PORT}/healthz`, 'worker-2 /healthz'],
    [`${project.codecUrl}/healthz`, 'codec-server /healthz'],
  ];
  // As a kubelet probes: a few tries (failureThreshold), each with a timeout.
  for (const [url, what] of probes) {
    let answer = '';
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch(
        (error: Error) => error,
      );
      answer =
        response instanceof Error
          ? `${response.message} (${String((response.cause as Error | undefined)?.message ?? '')})`
          : String(response.status);
      if (answer === '200') break;
      await sleep(2_000);
    }
    if (answer !== '200') failures.push(`${what} answered ${answer}`);
    else facts.push(`${what} 200`);
  }
  return {
    failures,
    detail: `${facts.join('; ')}; read-only root, /tmp tmpfs, cap_drop ALL, no-new-privileges`,
  };
}

/** Signed events at RATE per second (24 in flight at most) from event `from` on, until stopped. */
const stream = (provider: Provider, runId: string, from: number) =>
  cappedLoad({
    rate: RATE,
    maxInFlight: 24,
    send: (i) => provider.deliver(makeEvent(runId, from + i), 180_000),
  });

/**
 * After the faults: every acknowledged event completed with one claim and one effect per key
 * (testkit/invariants.ts, against the receiver container's records), and each acknowledged event's
 * downstream keys delivered and applied exactly once.
 */
async function exactlyOnce(project: Project, provider: Provider) {
  // The checker reads only the receiver's `keys`: here those the receiver container recorded.
  const stack = (keys: Map<string, KeyRecord>) => ({
    pool: project.pool,
    client: project.client,
    receiver: { keys } as RecordingReceiver,
  });
  // First wait for completion (the receiver's records are read once everything has settled).
  await checkInvariants(stack(await project.receiverKeys()), provider, { timeoutMs: SETTLE_TIMEOUT_MS });
  const keys = await project.receiverKeys();
  const report = await checkInvariants(stack(keys), provider, { timeoutMs: SETTLE_TIMEOUT_MS });
  const failures = [...report.failures];
  const ids = [...provider.acknowledged.keys()];
  const { rows } = await project.pool.query<{ event_id: string; key: string; status: string }>(
    `SELECT event_id, idempotency_key AS key, status FROM outbox WHERE event_id = ANY($1::text[])`,
    [ids],
  );
  const perEvent = new Map<string, number>();
  for (const row of rows) {
    perEvent.set(row.event_id, (perEvent.get(row.event_id) ?? 0) + 1);
    const record = keys.get(row.key);
    if (row.status !== 'delivered')
      failures.push(`a downstream effect of event #${shortHash(row.event_id)} is ${row.status}`);
    else if (record?.applied !== 1)
      failures.push(`key of event #${shortHash(row.event_id)} applied ${record?.applied ?? 0} times`);
  }
  for (const id of ids)
    if ((perEvent.get(id) ?? 0) < 2)
      failures.push(
        `event #${shortHash(id)} has ${perEvent.get(id) ?? 0} downstream effects, not 2 (carrier, ERP)`,
      );
  return {
    failures,
    detail: `${figuresText(report.figures)}; ${rows.length} downstream keys delivered, ${[...keys.values()].reduce((sum, r) => sum + r.requests, 0)} requests at the receiver`,
  };
}

async function loadWithWorkerFaults(project: Project, provider: Provider, runId: string) {
  const faults: string[] = [];
  const load = stream(provider, runId, 0);
  await sleep(6_000);
  const killed = await project.container('worker-1');
  await must('docker', ['kill', killed]);
  faults.push(`docker kill worker-1 at event ${load.sent()}`);
  await sleep(4_000);
  const restarted = await project.container('worker-2');
  const restartAt = Date.now();
  await must('docker', ['restart', '-t', String(WORKER_GRACE_S), restarted], { timeoutMs: 120_000 });
  faults.push(`docker restart worker-2 at event ${load.sent()} (${seconds(restartAt)} s)`);
  await sleep(4_000);
  // docker kill is a manual stop: no restart policy brings the container back; an operator does.
  const state = await project.inspect<{ Running: boolean }>('worker-1', '.State');
  if (!state.Running) {
    await must('docker', ['start', killed]);
    faults.push('docker start worker-1');
  }
  await sleep(6_000);
  const { sent, acknowledged, failures } = await load.stop();
  const healthy = await waitHealthy(project, 120_000);
  for (const entry of healthy.waiting.filter((e) => e.Service.startsWith('worker')))
    failures.push(`${entry.Service} is ${entry.State}/${entry.Health} after the faults`);
  return { failures, detail: `${faults.join('; ')}; ${sent} sent, ${acknowledged} acknowledged` };
}

/**
 * `docker stop` of a container while events stream: it must exit 0 (settle's own shutdown, not
 * SIGKILL's 137) within `limitS`; it is started again and must be healthy; nothing acknowledged is
 * lost (checked by the exactly-once check that follows).
 */
async function stopWhileBusy(
  project: Project,
  provider: Provider,
  runId: string,
  from: number,
  service: string,
  limitS: number,
) {
  const load = stream(provider, runId, from);
  await sleep(4_000);
  const id = await project.container(service);
  const grace = await project.inspect<number | null>(service, '.Config.StopTimeout');
  const at = Date.now();
  await must('docker', ['stop', id], { timeoutMs: 180_000 });
  const took = seconds(at);
  const state = await project.inspect<{ ExitCode: number; OOMKilled: boolean }>(service, '.State');
  const logs = await run('docker', ['logs', '--tail', '20', id]);
  await must('docker', ['start', id]);
  await sleep(2_000);
  const { sent, acknowledged, failures } = await load.stop();
  if (state.ExitCode !== 0) failures.push(`${service} exited ${state.ExitCode} (137 is SIGKILL), not 0`);
  if (took > limitS) failures.push(`${service} took ${took} s to stop, more than ${limitS} s`);
  const healthy = await waitHealthy(project, 120_000);
  const entry = healthy.entries.find((e) => e.Service === service);
  if (entry?.State !== 'running' || (entry.Health && entry.Health !== 'healthy'))
    failures.push(`${service} is ${entry?.State}/${entry?.Health} after its restart`);
  const said = `${logs.stdout}${logs.stderr}`.trim().split('\n').slice(-1)[0] ?? '';
  return {
    failures,
    detail: `stopped in ${took} s (stop grace ${grace ?? 10} s), exit ${state.ExitCode}; ${sent} sent, ${acknowledged} acknowledged; last line: ${said.slice(0, 160)}`,
    sent,
  };
}

/** The whole scenario on one project: docker-compose.yml, or with docker-compose.tls.yml on top. */
async function scenario(project: Project, receiverDir: string): Promise<void> {
  const label = project.tls ? 'TLS: ' : '';
  await project.prepare(receiverDir);
  log(`project ${project.name}: ${project.files.join(' + ')}; ports ${JSON.stringify(project.ports)}`);
  const up = await check(`${label}compose up: every health check healthy, every one-shot job exited 0`, () =>
    upAndHealthy(project),
  );
  if (!up) return;
  await check(
    `${label}settle's containers: non-root, read-only root, no capabilities, the image's entrypoint, probes answer`,
    () => containerSettings(project),
  );
  await project.connect();
  const runId = newRunId(project.tls ? 's' : 'c');
  await addShipments(
    project.pool,
    Array.from({ length: 2_000 }, (_, i) => shipmentFor(runId, i)),
  );
  const provider = new Provider(project);
  await check(
    `${label}signed events through the gateway while worker-1 is killed and worker-2 restarted`,
    () => loadWithWorkerFaults(project, provider, runId),
  );
  await check(`${label}every acknowledged event applied once, each downstream key delivered once`, () =>
    exactlyOnce(project, provider),
  );
  await check(`${label}the UI serves its page and lists the namespace's workflows`, () =>
    uiServes(
      `http://127.0.0.1:${project.ports.SETTLE_UI_PORT}`,
      NAMESPACE,
      new Set([...provider.acknowledged.keys()].map((id) => paymentWorkflowId(id))),
    ),
  );
  await check(`${label}tracing: a webhook's traceparent reaches the jaeger service as one trace`, () =>
    traceArrivesWhole(project, runId),
  );
  await check(
    `${label}payloads stored encrypted; the codec server decodes them for its token only; the UI points at it`,
    () =>
      storedHistoryIsEncrypted({
        client: project.client,
        pool: project.pool,
        provider: new Provider(project),
        runId,
        index: 100_000,
        codecUrl: project.codecUrl,
        token: project.codecToken,
        namespace: NAMESPACE,
        ui: {
          url: `http://127.0.0.1:${project.ports.SETTLE_UI_PORT}`,
          origin: `http://localhost:${project.ports.SETTLE_UI_PORT}`,
          codecEndpoint: `http://localhost:${project.ports.SETTLE_CODEC_PORT}/${project.codecToken}`,
        },
      }),
  );
  let from = provider.acknowledged.size + 200;
  await check(`${label}docker stop of a busy gateway: its own shutdown within 10 s`, async () => {
    const result = await stopWhileBusy(project, provider, runId, from, 'gateway', 10);
    from += result.sent + 50;
    return result;
  });
  await check(
    `${label}docker stop of a busy worker: its own shutdown within its ${WORKER_GRACE_S} s grace`,
    async () => {
      const result = await stopWhileBusy(project, provider, runId, from, 'worker-1', WORKER_GRACE_S);
      from += result.sent + 50;
      return result;
    },
  );
  await check(`${label}after the stops: every acknowledged event applied once, nothing lost`, () =>
    exactlyOnce(project, provider),
  );
}

/**
 * The jaeger service (profile `tracing`) holds a traced webhook's whole trace, and the receiver
 * container's carrier and ERP requests carry its ID (testkit/jaeger.ts, as the topology run checks it).
 */
async function traceArrivesWhole(project: Project, runId: string) {
  await addShipments(project.pool, [shipmentFor(runId, 200_000)]);
  const event = makeEvent(runId, 200_000);
  return tracedWebhookArrivesWhole({
    gatewayUrl: project.gatewayUrl,
    secret: project.secret,
    jaegerUrl: `http://127.0.0.1:${project.ports.SETTLE_JAEGER_PORT}`,
    event,
    downstream: async () =>
      (await project.receiverRecords())
        .filter((record) => record.key.startsWith(`${event.id}:`))
        .flatMap((record) => record.traceparents.map((traceparent) => ({ path: record.path, traceparent }))),
    secrets: {
      'the webhook secret': project.secret,
      'the API token': project.apiToken,
      'the codec token': project.codecToken,
      'the payload key': project.env.SETTLE_PAYLOAD_KEYS?.split(':')[1] ?? '',
      'the outbound secret': project.env.SETTLE_OUTBOUND_SECRET ?? '',
      'the reminder secret': project.env.SETTLE_REMINDER_SECRET ?? '',
    },
  });
}

/** The receiver container's program: tools/compose/compose-check-receiver.ts bundled into one file. */
async function bundleReceiver(dir: string): Promise<void> {
  await build({
    entryPoints: [join(PROJECT_ROOT, 'tools', 'compose', 'compose-check-receiver.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: join(dir, 'receiver.mjs'),
    logLevel: 'warning',
  });
}

async function main() {
  const started = Date.now();
  const projects: Project[] = [];
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      if (checks.stopped) return;
      checks.stopped = true;
      log(`${signal}: docker compose down -v for every project this run started`);
      void Promise.all(projects.map((project) => project.down())).finally(() => {
        checks.record(`interrupted by ${signal}`, { failures: ['interrupted'] });
        checks.summary();
        process.exit(130);
      });
    });
  const receiverDir = mkdtempSync(join(tmpdir(), 'settle-compose-receiver-'));
  chmodSync(receiverDir, 0o755); // the receiver container's user (uid 1000) reads it
  try {
    log(`load ${loadavg()[0]!.toFixed(2)}`);
    const ready = await check('Docker engine and Compose plugin', async () => {
      const engine = await ensureEngine();
      const compose = await ensureCompose();
      return { failures: [], detail: `${engine}; ${compose}` };
    });
    if (!ready) return;
    const images = await check(
      "images: base images, settle's image, third-party images at their pinned tags",
      async () => {
        const details: string[] = [];
        let at = Date.now();
        details.push(await ensureBaseImages());
        timings.push(`base images ${seconds(at)} s`);
        at = Date.now();
        await buildSettleImage(SETTLE_IMAGE);
        timings.push(`${SETTLE_IMAGE} ${seconds(at)} s`);
        details.push(`${SETTLE_IMAGE} built in ${seconds(at)} s`);
        if (prepareOnly) return { failures: [], detail: details.join('; ') };
        for (const image of thirdPartyImages(COMPOSE_FILES)) {
          const outcome = await ensureThirdPartyImage(image);
          details.push(`${image} ${outcome.how} (${outcome.seconds} s)`);
          timings.push(`${image} ${outcome.how} ${outcome.seconds} s`);
        }
        return { failures: [], detail: details.join('; ') };
      },
    );
    if (!images || prepareOnly) return;
    await bundleReceiver(receiverDir);
    for (const tls of withTls ? [false, true] : [false]) {
      const project = new Project(tls);
      projects.push(project);
      const before = checks.failed;
      try {
        await scenario(project, receiverDir);
      } catch (error) {
        await check(`${tls ? 'TLS: ' : ''}scenario ran to its end`, async () => {
          throw error;
        });
      } finally {
        const failedNow = checks.failed > before;
        if (failedNow || keepLogs) {
          await project.saveLogs();
          log(`logs of ${project.name} kept in ${project.scratch}/logs`);
        }
        await project.down();
        await check(`${tls ? 'TLS: ' : ''}docker compose down -v removes the project`, async () => {
          const label = `label=com.docker.compose.project=${project.name}`;
          const failures: string[] = [];
          for (const [what, list] of [
            ['containers', ['ps', '-a']],
            ['volumes', ['volume', 'ls']],
            ['networks', ['network', 'ls']],
          ] as const) {
            if ((await run('docker', [...list, '-q', '--filter', label])).stdout.trim())
              failures.push(`${what} left`);
          }
          return { failures, detail: 'no container, volume or network of the project left' };
        });
        if (!failedNow && !keepLogs) rmSync(project.scratch, { recursive: true, force: true });
      }
    }
  } finally {
    await Promise.all(projects.map((project) => project.down()));
    await run('docker', ['rmi', SETTLE_IMAGE]); // the tag only: its layers stay cached for the next run
    rmSync(receiverDir, { recursive: true, force: true });
    timings.push(`whole check ${seconds(started)} s`);
    log(`timings: ${timings.join('; ')}; load ${loadavg()[0]!.toFixed(2)}`);
    if (!checks.stopped) checks.summary();
  }
}

runMain('compose-check', main, { stack: true });
