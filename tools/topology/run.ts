/**
 * `npm run topology [-- --short] [-- --no-tls] [-- --rollout] [-- --no-faults] [-- --workers=N]
 * [-- --no-jaeger] [-- --jaeger-ui=DIR] [-- --screenshots=DIR]`: settle on a real Temporal cluster,
 * deployed as docs/deployment.md says, under faults (tools/README.md says what it proves).
 * testkit/cluster.ts brings up PostgreSQL with Temporal's schemas, the four Temporal services
 * with mTLS on the frontend, the namespace and the UI server; then `settle migrate`, two gateways and
 * the workers, a recording receiver and Jaeger. Each check prints PASS or FAIL, the last line
 * "N passed, M failed"; any failure exits non-zero. The first run builds the Temporal server into
 * .tools/ (testkit/binaries.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { RecordingReceiver } from '../../testkit/receiver';
import { storedHistoryIsEncrypted, uiShowsDecodedInput } from '../../testkit/codec-check';
import { findChromium, uiServes, viewPage } from '../../testkit/ui-browser';
import { cappedLoad, erpKey, makeEvent, newRunId, shipmentFor } from '../../testkit/load';
import { Checks, errorText, figuresText } from '../../testkit/checks';
import { sleep, within, type Child } from '../../testkit/processes';
import { inheritedEnv, settleProcessEnv } from '../../testkit/stack';
import { checkInvariants } from '../../testkit/invariants';
import { Provider } from '../../testkit/provider';
import { startCodecServer } from '../../src/codec/server';
import { addShipments } from '../../src/db/shipments';
import { paymentWorkflowId } from '../../src/domain/ids';
import { createPool } from '../../src/db/pool';
import { logger } from '../../src/lib/logger';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { EncryptionCodec, StaticKeySource } from '../../src/temporal/payload-codec';
import { SETTLE_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { TemporalCluster, type Identity } from '../../testkit/cluster';
import { ensureJaeger, startJaeger, tracedWebhookArrivesWhole, type Jaeger } from '../../testkit/jaeger';
import { startProgram } from '../../testkit/programs';
import { rolloutUnderLoad } from './rollout';

const short = process.argv.includes('--short');
const tls = !process.argv.includes('--no-tls');
/** `--workers=1|2`: how many `settle worker`s run (2 by default; the fault phase rolls them all). */
const WORKERS = Number(
  process.argv.find((arg) => arg.startsWith('--workers='))?.slice('--workers='.length) ?? 2,
);
if (!Number.isInteger(WORKERS) || WORKERS < 1 || WORKERS > 8) throw new Error('--workers must be 1 to 8');
const faults = !process.argv.includes('--no-faults');
/** `--rollout`: last, a rollout of workflow code with Worker Deployments under load (tools/topology/rollout.ts). */
const rollout = process.argv.includes('--rollout');
/** `--no-jaeger`: no collector, no tracing in any settle process, no tracing check. */
const jaegerOn = !process.argv.includes('--no-jaeger');
/**
 * `--jaeger-ui=DIR`: a built Jaeger UI for Jaeger to serve (testkit/jaeger.ts): then headless
 * Chromium opens the tracing check's trace in it and keeps `trace-jaeger.png` in the screenshot folder.
 */
const JAEGER_UI = process.argv.find((arg) => arg.startsWith('--jaeger-ui='))?.slice('--jaeger-ui='.length);
/** Where the UI check's screenshots are kept (`--screenshots=DIR`); printed in its line. */
const SCREENSHOT_DIR =
  process.argv.find((arg) => arg.startsWith('--screenshots='))?.slice('--screenshots='.length) ??
  join(tmpdir(), 'settle-topology-screenshots');
/** The Keyword search attributes settle sets: the namespace must have them all. */
const SEARCH_ATTRIBUTES = SETTLE_SEARCH_ATTRIBUTES.map((key) => key.name);
/** Events per second the provider sends while the faults happen. */
const RATE = short ? 4 : 8;
/** Events sent at most, and waiting for an answer at most at once. */
const MAX_EVENTS = short ? 600 : 4_000;
const MAX_IN_FLIGHT = 24;
/** Time for everything acknowledged to finish after the faults (a killed attempt waits 30 s). */
const SETTLE_TIMEOUT_MS = 300_000;

const checks = new Checks();
const check = checks.run.bind(checks);

function log(message: string) {
  process.stderr.write(`topology: ${message}\n`);
}

class Topology {
  readonly scratch = mkdtempSync(join(tmpdir(), 'settle-topology-'));
  /** The run's payload key: every settle process encrypts, as production does with keys set. */
  readonly payloadKey = { id: `topology-${randomBytes(3).toString('hex')}`, key: randomBytes(32) };
  readonly payloadKeys = `${this.payloadKey.id}:${this.payloadKey.key.toString('base64')}`;
  readonly cluster = new TemporalCluster({ scratch: this.scratch, tls, log, payloadKeys: [this.payloadKey] });
  readonly secret = `whsec_${randomBytes(24).toString('base64')}`;
  readonly apiToken = randomBytes(24).toString('hex');
  readonly receiver = new RecordingReceiver();
  /** The UI's codec server (settle codec-server's, in this process) and its token. */
  readonly codecToken = randomBytes(24).toString('hex');
  private codec: Awaited<ReturnType<typeof startCodecServer>> | undefined;
  get codecUrl(): string {
    return this.codec!.url;
  }
  readonly gateways: (Child | undefined)[] = [undefined, undefined];
  readonly gatewayPorts: number[] = [];
  readonly workers: Child[] = [];
  /** The trace collector the gateways and workers export to (unless `--no-jaeger`). */
  jaeger: Jaeger | undefined;
  /** The trace the tracing check sent, for the Jaeger UI's screenshot. */
  tracedTraceId: string | undefined;
  private jaegerChild: Child | undefined;
  pool!: pg.Pool;
  client!: Client;
  databaseUrl = '';
  /** Every settle process this run started, alive or not: all are stopped at the end. */
  readonly children = new Set<Child>();
  private sends = 0;
  private closed = false;

  /** The provider alternates between the two gateways, so a retry goes to the other one. */
  get gatewayUrl(): string {
    this.sends += 1;
    return `http://127.0.0.1:${this.gatewayPorts[this.sends % this.gatewayPorts.length]}`;
  }

  async start(): Promise<void> {
    // The UI server is configured as production's: pointed at a codec server, the token in its path.
    // The UI's origin is known once it listens; the codec server reads this list on every call.
    const uiOrigins: string[] = [];
    this.codec = await startCodecServer({
      codec: new EncryptionCodec(new StaticKeySource([this.payloadKey])),
      token: this.codecToken,
      namespace: this.cluster.namespace,
      corsOrigins: uiOrigins,
      host: '127.0.0.1',
      port: 0,
      logger,
    });
    this.cluster.options.codecEndpoint = `${this.codec.url}/${this.codecToken}`;
    await this.cluster.start();
    uiOrigins.push(new URL(this.cluster.uiUrl).origin);
    this.databaseUrl = this.cluster.postgres.urlFor('settle');
    this.pool = createPool(this.databaseUrl, { max: 10 });
    this.client = await this.cluster.connect();
    await this.receiver.start();
    for (let i = 0; i < 2; i += 1) this.gatewayPorts.push(await this.cluster.ports.any());
    if (jaegerOn) {
      this.jaeger = await startJaeger({
        binary: await ensureJaeger((line) => process.stderr.write(`${line}\n`)),
        dir: this.scratch,
        ports: this.cluster.ports,
        logFile: join(this.scratch, 'logs', 'jaeger.log'),
        onSpawn: (child) => (this.jaegerChild = child),
        uiAssets: JAEGER_UI,
      });
    }
  }

  /**
   * The OpenTelemetry variables a deployment sets on a traced role (docs/operations.md, "Tracing"),
   * none without Jaeger; every request recorded: the other checks count events, not CPU.
   */
  tracingEnv(role: 'gateway' | 'worker'): Record<string, string> {
    if (!this.jaeger) return {};
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: this.jaeger.otlpEndpoint,
      OTEL_SERVICE_NAME: `settle-${role}`,
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=topology',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    };
  }

  /** A settle process's environment: the ordinary settle variables and Temporal's own. */
  env(identity: Identity, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
      ...inheritedEnv(),
      ...this.cluster.clientEnv(identity),
      ...settleProcessEnv({
        databaseUrl: this.databaseUrl,
        taskQueue: 'settle',
        secret: this.secret,
        apiToken: this.apiToken,
        receiverUrl: this.receiver.url,
        scratch: this.scratch,
        logLevel: 'info',
        payloadKeys: this.payloadKeys,
      }),
      // glibc's malloc arenas, as the Dockerfile sets them.
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      ...extra,
    };
  }

  /** `settle <role>` in a process of its own, tracked from its start; resolves once `ready`. */
  spawnSettle(
    name: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    ready?: (child: Child) => Promise<boolean>,
  ): Promise<Child> {
    return startProgram({
      name,
      command: process.execPath,
      args: ['--import', 'tsx', 'src/cli/main.ts', ...args],
      env,
      cwd: PROJECT_ROOT,
      logFile: join(this.scratch, 'logs', `settle-${name.replace(/\W+/g, '-')}.log`),
      ready,
      timeoutMs: 120_000,
      onSpawn: (child) => this.children.add(child),
    });
  }

  /** `settle migrate`, as a deployment's one-shot step. */
  async migrate(): Promise<string> {
    const child = await this.spawnSettle('migrate', ['migrate'], this.env('settle'));
    const how = await child.exited;
    if (how !== 0) throw new Error(`settle migrate exited ${how}: ${child.output().trim()}`);
    return child.output().trim();
  }

  async startGateway(index: number, identity: Identity = 'settle'): Promise<Child> {
    const port = this.gatewayPorts[index]!;
    const gateway = await this.spawnSettle(
      `gateway-${index + 1}`,
      ['gateway'],
      this.env(identity, { PORT: String(port), ...this.tracingEnv('gateway') }),
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok === true,
    );
    this.gateways[index] = gateway;
    return gateway;
  }

  async startWorker(identity: Identity = 'settle', extraEnv: Record<string, string> = {}): Promise<Child> {
    const worker = await this.spawnSettle(
      'worker',
      ['worker'],
      this.env(identity, { ...this.tracingEnv('worker'), ...extraEnv }),
      async (child) => child.output().includes('worker running'),
    );
    this.workers.push(worker);
    void worker.exited.then(() => this.workers.splice(this.workers.indexOf(worker) >>> 0, 1));
    return worker;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.children].map((child) => child.stop().catch(() => {})));
    // After settle's processes, which send the spans they hold as they stop.
    await this.jaegerChild?.stop().catch(() => {});
    await this.client?.connection.close().catch(() => {});
    await this.pool?.end().catch(() => {});
    await this.receiver.close().catch(() => {});
    await this.codec?.close().catch(() => {});
    await this.cluster.stop();
  }
}

/**
 * Starts a settle role without a client certificate against the mTLS frontend and waits (a bound on
 * a hang) for it to exit: it must exit non-zero with a message naming TLS.
 */
async function refusedWithoutCertificate(topology: Topology, role: 'worker' | 'gateway') {
  const failures: string[] = [];
  const port = await topology.cluster.ports.any();
  const child = await topology.spawnSettle(
    `${role} without a certificate`,
    [role],
    topology.env('none', { PORT: String(port) }),
  );
  // A bound on a hang: on a loaded machine a worker's start alone is slow to reach its TLS failure.
  const how = await within(child.exited, 300_000, 'still running after 300 s');
  await child.kill();
  const said = child.output();
  const line =
    said.split('\n').find((text) => /tls|certificate|handshake/i.test(text)) ?? said.trim().split('\n').pop();
  if (how === 0 || typeof how === 'string') failures.push(`exited ${how}`);
  if (!/\bTLS\b/i.test(said)) failures.push(`its output does not name TLS: ${said.trim().slice(-400)}`);
  return { failures, detail: `exit ${how}: ${(line ?? '').trim().slice(0, 200)}` };
}

async function main() {
  const started = Date.now();
  const topology = new Topology();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping everything this run started`);
      void topology.close().finally(() => {
        rmSync(topology.scratch, { recursive: true, force: true });
        process.exit(130);
      });
    });
  }
  try {
    log(
      `scratch ${topology.scratch}; mTLS ${tls ? 'on' : 'off'}; tracing to Jaeger ${jaegerOn ? 'on' : 'off'}; ` +
        `load ${loadavg()[0]!.toFixed(2)}`,
    );
    const up = await check(
      'cluster: PostgreSQL, schemas, four Temporal services, namespace, UI',
      async () => {
        await topology.start();
        return { failures: [], detail: `frontend ${topology.cluster.address}, UI ${topology.cluster.uiUrl}` };
      },
    );
    if (!up) return;
    await check('Temporal: four services from one config, 4 history shards, membership ports ≤ 32767', () =>
      clusterShape(topology),
    );
    await check(`namespace ${topology.cluster.namespace} with its Keyword search attributes`, () =>
      searchAttributes(topology),
    );
    await check('UI server: serves the UI and reaches the frontend', () =>
      uiServes(topology.cluster.uiUrl, topology.cluster.namespace),
    );
    const migrated = await check('settle migrate', async () => ({
      failures: [],
      detail: await topology.migrate(),
    }));
    if (!migrated) return;
    if (tls) {
      await check('mTLS: a worker without a client certificate fails at start naming TLS', () =>
        refusedWithoutCertificate(topology, 'worker'),
      );
      await check('mTLS: a gateway without a client certificate fails at start naming TLS', () =>
        refusedWithoutCertificate(topology, 'gateway'),
      );
    }
    const running = await check(
      `two gateways and ${WORKERS} worker${WORKERS > 1 ? 's' : ''} start${tls ? ' with a client certificate' : ''}`,
      async () => {
        await Promise.all([topology.startGateway(0), topology.startGateway(1)]);
        for (let i = 0; i < WORKERS; i += 1) await topology.startWorker();
        return { failures: [], detail: `gateways on ${topology.gatewayPorts.join(', ')}` };
      },
    );
    if (!running) return;
    if (topology.jaeger) {
      const jaeger = topology.jaeger;
      await check(
        "tracing: a webhook's traceparent reaches Jaeger as one trace, gateway to carrier and ERP",
        () => traceArrivesWhole(topology, jaeger),
      );
      const traceId = topology.tracedTraceId;
      if (JAEGER_UI && traceId)
        await check("Jaeger's UI in headless Chromium: the trace's page shows its spans", () =>
          jaegerShowsTrace(jaeger, traceId),
        );
    }
    let marked: Awaited<ReturnType<typeof storedHistoryIsEncrypted>>['run'];
    await check(
      'payloads: stored encrypted by the real server, decoded by the codec server for its token only',
      async () => {
        const outcome = await storedHistoryIsEncrypted({
          client: topology.client,
          pool: topology.pool,
          provider: new Provider(topology),
          runId: newRunId('k'),
          index: 0,
          codecUrl: topology.codecUrl,
          token: topology.codecToken,
          namespace: topology.cluster.namespace,
          ui: {
            url: topology.cluster.uiUrl,
            origin: new URL(topology.cluster.uiUrl).origin,
            codecEndpoint: `${topology.codecUrl}/${topology.codecToken}`,
          },
        });
        marked = outcome.run;
        return outcome;
      },
    );
    if (marked) {
      const run = marked;
      await check(
        "the UI in headless Chromium: the run's input decoded through the codec, ciphertext without it",
        async () => {
          const chromium = await findChromium(log);
          const plainUi = await topology.cluster.startUiServer('no-codec');
          return uiShowsDecodedInput({
            chromium,
            namespace: topology.cluster.namespace,
            run,
            withCodec: topology.cluster.uiUrl,
            withoutCodec: plainUi.url,
            screenshotDir: SCREENSHOT_DIR,
          });
        },
      );
    }
    await check("a run settle did not start holds an event's ID: the signed event still applies once", () =>
      squattedIdTakenBack(topology),
    );
    if (faults) await loadWithFaults(topology);
    if (rollout)
      await check('rollout under load: v1 to v2 with Worker Deployments (tools/topology/rollout.ts)', () =>
        rolloutUnderLoad(topology, new Provider(topology), { rate: RATE, events: short ? 150 : 600, log }),
      );
  } finally {
    await topology.close();
    if (checks.failed) log(`logs of the Temporal processes kept in ${topology.scratch}/logs`);
    else rmSync(topology.scratch, { recursive: true, force: true });
    log(`${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(2)}`);
    checks.summary();
  }
}

/**
 * Anyone who reaches the frontend can start `paymentWorkflow` under the ID of an event before the
 * event arrives (docs/operations.md, "A run settle did not start holds an event's ID"). On the real
 * server as on the dev server, the signed event must be accepted, not answered "duplicate", and apply
 * once through settle's own run; the squatting run is terminated and recorded.
 */
async function squattedIdTakenBack(topology: Topology) {
  const failures: string[] = [];
  const runId = newRunId('q');
  await addShipments(topology.pool, [shipmentFor(runId, 0)]);
  const event = makeEvent(runId, 0);
  const workflowId = paymentWorkflowId(event.id);
  const squatter = await topology.client.workflow.start('paymentWorkflow', {
    taskQueue: 'settle',
    workflowId,
    args: [{}],
    startDelay: '720h',
  });
  const squatterRun = squatter.firstExecutionRunId;
  const reply = await new Provider(topology).deliver(event, 120_000);
  if (reply.status !== 202) failures.push(`the signed event answered ${reply.status}, not 202 accepted`);
  const applied = await within(topology.receiver.waitForApplied(erpKey(event.id)), 180_000, undefined);
  if (applied === undefined) failures.push('the event was not delivered within 180 s');
  const status = (await topology.client.workflow.getHandle(workflowId, squatterRun).describe()).status.name;
  if (status !== 'TERMINATED') failures.push(`the squatting run is ${status}, not TERMINATED`);
  const recorded = await topology.pool.query<{ reason: string }>(
    'SELECT reason FROM unadmitted_runs WHERE workflow_id = $1 AND run_id = $2',
    [workflowId, squatterRun],
  );
  if (recorded.rows[0]?.reason !== 'foreign_start')
    failures.push(
      `the squatting run is recorded as ${recorded.rows[0]?.reason ?? 'nothing'}, not foreign_start`,
    );
  const ledger = await topology.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM ledger_entries WHERE event_id = $1',
    [event.id],
  );
  if (ledger.rows[0]!.n !== 1) failures.push(`${ledger.rows[0]!.n} ledger entries, not 1`);
  return {
    failures,
    detail: `answered ${reply.status}; squatter ${status}, recorded ${recorded.rows[0]?.reason ?? 'no'}; ${ledger.rows[0]!.n} ledger entry`,
  };
}

/** A traced webhook's whole trace in Jaeger (testkit/jaeger.ts); keeps its ID for the UI check. */
async function traceArrivesWhole(topology: Topology, jaeger: Jaeger) {
  const runId = newRunId('o');
  await addShipments(topology.pool, [shipmentFor(runId, 0)]);
  const event = makeEvent(runId, 0);
  const outcome = await tracedWebhookArrivesWhole({
    gatewayUrl: topology.gatewayUrl,
    secret: topology.secret,
    jaegerUrl: jaeger.uiUrl,
    event,
    downstream: async () =>
      topology.receiver.requests
        .filter((request) => request.key.startsWith(`${event.id}:`))
        .map((request) => ({ path: request.path, traceparent: request.headers.traceparent as string })),
    secrets: {
      'the webhook secret': topology.secret,
      'the API token': topology.apiToken,
      'the payload key': topology.payloadKey.key.toString('base64'),
      'the codec token': topology.codecToken,
    },
  });
  topology.tracedTraceId = outcome.traceId;
  return outcome;
}

/** The trace's page in Jaeger's UI: every role's spans shown by name; the screenshot is kept. */
async function jaegerShowsTrace(jaeger: Jaeger, traceId: string) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const screenshot = join(SCREENSHOT_DIR, 'trace-jaeger.png');
  const view = await viewPage({
    chromium: await findChromium(log),
    url: `${jaeger.uiUrl}/trace/${traceId}`,
    expected: 'RunActivity:deliverOutboxRow',
    screenshot,
    // Jaeger gives the span names a quarter of the width: at 2,000 px the deepest (eight levels) shows whole.
    viewport: { width: 2000, height: 720 },
  });
  const failures = view.appeared
    ? []
    : [`the page never showed RunActivity:deliverOutboxRow: ${view.text.slice(0, 300)}`];
  const shown = ['settle-gateway', 'settle-worker', 'POST /webhooks/payments', 'RunWorkflow:paymentWorkflow'];
  for (const name of shown)
    if (view.appeared && !view.text.includes(name)) failures.push(`the page does not show ${name}`);
  return { failures, detail: `screenshot ${screenshot}` };
}

/** The cluster as Temporal's own tables record it. */
async function clusterShape(topology: Topology) {
  const failures: string[] = [];
  const client = new pg.Client({ connectionString: topology.cluster.postgres.urlFor('temporal') });
  await client.connect();
  try {
    const { rows } = await client.query<{ role: number; rpc_port: number; pid: number }>(
      `SELECT role, rpc_port FROM cluster_membership WHERE record_expiry > now() ORDER BY role`,
    );
    const shards = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM shards');
    const roles = new Set(rows.map((row) => row.role));
    if (roles.size !== 4) failures.push(`${roles.size} service roles in cluster_membership, not 4`);
    const high = rows.filter((row) => row.rpc_port > 32_767);
    if (high.length)
      failures.push(`membership ports above 32767: ${high.map((row) => row.rpc_port).join(', ')}`);
    if (shards.rows[0]!.n !== 4) failures.push(`${shards.rows[0]!.n} history shards, not 4`);
    const pids = [...topology.cluster.services.values()].map((child) => child.pid);
    if (new Set(pids).size !== 4) failures.push('the services do not run as four processes');
    return {
      failures,
      detail: `roles ${[...roles].join(',')}; membership ports ${rows.map((row) => row.rpc_port).join(', ')}; shards ${shards.rows[0]!.n}; pids ${pids.join(', ')}`,
    };
  } finally {
    await client.end();
  }
}

async function searchAttributes(topology: Topology) {
  const response = await topology.client.connection.operatorService.listSearchAttributes({
    namespace: topology.cluster.namespace,
  });
  const custom = response.customAttributes ?? {};
  const failures = SEARCH_ATTRIBUTES.filter((name) => custom[name] === undefined).map(
    (name) => `search attribute ${name} is missing`,
  );
  // IndexedValueType 2 is KEYWORD.
  for (const name of SEARCH_ATTRIBUTES)
    if (custom[name] !== undefined && custom[name] !== 2) failures.push(`${name} is not a Keyword`);
  return { failures, detail: Object.keys(custom).sort().join(', ') };
}

/**
 * Signed events at RATE per second through both gateways while, in turn: a worker is SIGKILLed and
 * replaced; both workers are rolled (a new one started, then the old one SIGTERMed); both gateways
 * are rolled (SIGTERM, restarted on the same port); the history service is restarted. Then every
 * event sent must be acknowledged and chaos' invariants must hold.
 */
async function loadWithFaults(topology: Topology) {
  const rounds = short ? 1 : 2;
  const runId = newRunId('t');
  const capacity = MAX_EVENTS;
  await addShipments(
    topology.pool,
    Array.from({ length: capacity }, (_, i) => shipmentFor(runId, i)),
  );
  const provider = new Provider(topology);
  const faults: string[] = [];
  const faultFailures: string[] = [];
  const load = cappedLoad({
    rate: RATE,
    maxInFlight: MAX_IN_FLIGHT,
    max: capacity,
    send: (i) => provider.deliver(makeEvent(runId, i), 180_000),
  });
  const step = async (name: string, body: () => Promise<void>) => {
    await sleep(5_000);
    const at = Date.now();
    try {
      await body();
      faults.push(`${name} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
    } catch (error) {
      faultFailures.push(`${name}: ${errorText(error)}`);
    }
    log(`${name} done at event ${load.sent()}`);
  };
  const expectExit = (what: string, how: number | string) => {
    if (how !== 0) faultFailures.push(`${what} exited ${how} on SIGTERM, not 0`);
  };
  for (let round = 0; round < rounds; round += 1) {
    await step('SIGKILL a worker, start a new one', async () => {
      await topology.workers[0]!.kill();
      await topology.startWorker();
    });
    await step('roll both workers (start a new one, SIGTERM an old one)', async () => {
      for (const old of [...topology.workers]) {
        await topology.startWorker();
        expectExit('a worker', await old.stop(60_000));
      }
    });
    await step('roll both gateways (SIGTERM, restart on the same port)', async () => {
      for (const index of [0, 1]) {
        expectExit(`gateway-${index + 1}`, await topology.gateways[index]!.stop(30_000));
        await topology.startGateway(index);
      }
    });
    await step('restart the Temporal history service', async () => {
      const how = await topology.cluster.restartService('history');
      if (how !== 0) faultFailures.push(`the history service exited ${how} on SIGTERM`);
    });
  }
  await sleep(5_000);
  const { sent, acknowledged, failures: lost } = await load.stop();
  await check(
    `under load: ${faults.length} faults, ${sent} signed events sent (at most ${RATE}/s, ${MAX_IN_FLIGHT} in flight)`,
    async () => {
      const failures = [...faultFailures, ...lost];
      if (provider.acknowledgedWhileDown)
        failures.push('an event was acknowledged while a dependency was down');
      return {
        failures,
        detail: `${faults.join('; ')}; acknowledged ${acknowledged}, 5xx or dropped answers retried ${provider.serverErrors}`,
      };
    },
  );
  await check('invariants: every acknowledged event completed, one claim, one effect per key', async () => {
    const report = await checkInvariants(topology, provider, { timeoutMs: SETTLE_TIMEOUT_MS });
    return {
      failures: report.failures,
      detail: figuresText(report.figures),
    };
  });
}

main().catch((error: unknown) => {
  checks.record('the run ran to its end', { failures: [errorText(error, true)] });
  checks.summary();
});
