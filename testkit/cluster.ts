/**
 * A real Temporal cluster on this machine, set up the way docs/deployment.md tells a deployment to:
 *   1. PostgreSQL (here the embedded one settle's tests use) and settle's own database;
 *   2. Temporal's persistence and visibility schemas applied by temporal-sql-tool
 *      (deploy/temporal/setup-schema.sh, the script docker-compose.yml runs);
 *   3. the four Temporal services (frontend, history, matching, worker), each a process of its own,
 *      all reading ONE config, deploy/temporal/temporal-server.yaml (also docker-compose.yml's), rendered
 *      by temporal-server from the environment; 4 history shards; optional mTLS on the frontend
 *      with certificates generated for the run;
 *   4. settle's namespace and search attributes created with the temporal CLI
 *      (deploy/temporal/setup-namespace.sh, also docker-compose.yml's);
 *   5. the standalone UI server, connected to the frontend like any client.
 * Every port is picked free at run time. `stop()` stops everything it started.
 */
import { Client, Connection } from '@temporalio/client';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Child } from './processes';
import type { PayloadKey } from '../src/config/payload-keys';
import { settleDataConverter } from '../src/temporal/data-converter';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/stack/embedded-postgres';
import { PROJECT_ROOT } from '../src/lib/paths';
import { findTemporalCli } from '../src/stack/temporal-binaries';
import { ensureTemporalServerTools, type TemporalServerTools } from './binaries';
import { generateRunCertificates, type RunCertificates } from './certs';
import { listening, PortPicker, runProgram, startProgram } from './programs';

export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/** The one config template (docker-compose.yml mounts the same file). */
export const SERVER_CONFIG_TEMPLATE = join(PROJECT_ROOT, 'deploy', 'temporal', 'temporal-server.yaml');
export const DYNAMIC_CONFIG = join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamicconfig.yaml');
const SETUP_SCHEMA = join(PROJECT_ROOT, 'deploy', 'temporal', 'setup-schema.sh');
const SETUP_NAMESPACE = join(PROJECT_ROOT, 'deploy', 'temporal', 'setup-namespace.sh');

export type ClusterOptions = {
  scratch: string;
  /** mTLS between clients (settle, the UI, the CLI) and the frontend. */
  tls: boolean;
  namespace?: string;
  historyShards?: number;
  log?: (line: string) => void;
  /** The keys settle's processes encrypt payloads with: the operator's client decrypts with them too. */
  payloadKeys?: PayloadKey[];
  /** The UI server's codec endpoint (`codec.endpoint`), a `settle codec-server` the browser reaches. */
  codecEndpoint?: string;
};

/** Which client certificate a client environment carries: settle's, the operator's, or none. */
export type Identity = 'settle' | 'admin' | 'none';

export class TemporalCluster {
  readonly namespace: string;
  readonly ports = new PortPicker();
  tools!: TemporalServerTools;
  cli = '';
  postgres!: EmbeddedDatabase;
  certs: RunCertificates | undefined;
  address = '';
  uiUrl = '';
  readonly services = new Map<TemporalService, Child>();
  /** Every UI server started (the cluster's own first), stopped with the cluster. */
  private readonly uis: Child[] = [];
  private serverPorts: Record<string, number> = {};
  /** The frontend's Prometheus endpoint (PROMETHEUS_ENDPOINT of deploy/temporal/temporal-server.yaml). */
  private frontendMetricsPort = 0;
  private uiPort = 0;
  private readonly log: (line: string) => void;

  constructor(readonly options: ClusterOptions) {
    this.namespace = options.namespace ?? 'settle';
    this.log = options.log ?? (() => {});
  }

  private path(name: string): string {
    return join(this.options.scratch, name);
  }

  async start(): Promise<void> {
    mkdirSync(this.path('logs'), { recursive: true });
    this.tools = await ensureTemporalServerTools(this.log);
    this.cli = await findTemporalCli();
    if (this.options.tls) this.certs = await generateRunCertificates(this.path('certs'));

    // 1. PostgreSQL.
    const postgresPort = await this.ports.any();
    this.log(`PostgreSQL on 127.0.0.1:${postgresPort}`);
    this.postgres = await startEmbeddedPostgres({ dataDir: this.path('pg'), port: postgresPort });
    await this.postgres.createDatabase('settle');

    // 2. Temporal's schemas.
    for (const name of ['FRONTEND_GRPC', 'FRONTEND_HTTP', 'HISTORY_GRPC', 'MATCHING_GRPC', 'WORKER_GRPC'])
      this.serverPorts[`${name}_PORT`] = await this.ports.any();
    for (const service of TEMPORAL_SERVICES)
      this.serverPorts[`${service.toUpperCase()}_MEMBERSHIP_PORT`] = await this.ports.membership();
    this.address = `127.0.0.1:${this.serverPorts.FRONTEND_GRPC_PORT}`;
    this.log('schemas: deploy/temporal/setup-schema.sh (temporal-sql-tool)');
    await runProgram(
      'setup-schema',
      'sh',
      [SETUP_SCHEMA],
      {
        ...this.serverEnv(),
        TEMPORAL_SQL_TOOL: this.tools.sqlTool,
        TEMPORAL_SCHEMA_DIR: this.tools.schemaDir,
      },
      this.path('logs/setup-schema.log'),
    );

    // 3. The four services.
    for (const service of TEMPORAL_SERVICES) await this.startService(service);
    this.log(
      `Temporal ${TEMPORAL_SERVICES.join(', ')} as 4 processes; frontend ${this.address}` +
        (this.options.tls ? ' (mTLS)' : ''),
    );

    // 4. Namespace and search attributes.
    this.log(`namespace ${this.namespace}: deploy/temporal/setup-namespace.sh (temporal CLI)`);
    await runProgram(
      'setup-namespace',
      'sh',
      [SETUP_NAMESPACE],
      { ...this.clientEnv('admin'), TEMPORAL_CLI: this.cli },
      this.path('logs/setup-namespace.log'),
    );

    // 5. The UI.
    await this.startUi();
  }

  /** Pid of its PostgreSQL's postmaster (for resource sampling), while it runs. */
  postgresPid(): number | undefined {
    try {
      return Number(readFileSync(this.path('pg/postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
    } catch {
      return undefined;
    }
  }

  /** What every temporal-server process reads (deploy/temporal/temporal-server.yaml's variables). */
  serverEnv(): NodeJS.ProcessEnv {
    const certs = this.certs;
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_SERVER_CONFIG_FILE_PATH: SERVER_CONFIG_TEMPLATE,
      DYNAMIC_CONFIG_FILE_PATH: DYNAMIC_CONFIG,
      TEMPORAL_ALLOW_NO_AUTH: 'true',
      LOG_LEVEL: 'warn',
      NUM_HISTORY_SHARDS: String(this.options.historyShards ?? 4),
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(this.postgres.port),
      POSTGRES_USER: 'postgres',
      POSTGRES_PWD: 'postgres',
      // Four services and settle's processes share one small PostgreSQL (200 connections).
      SQL_MAX_CONNS: '10',
      SQL_VIS_MAX_CONNS: '5',
      BIND_ON_IP: '127.0.0.1',
      ...Object.fromEntries(Object.entries(this.serverPorts).map(([key, port]) => [key, String(port)])),
      ...(certs
        ? {
            TEMPORAL_TLS_FRONTEND_CERT: certs.frontend.cert,
            TEMPORAL_TLS_FRONTEND_KEY: certs.frontend.key,
            TEMPORAL_TLS_CLIENT_CA_CERT: certs.ca,
            TEMPORAL_TLS_WORKER_CERT: certs.admin.cert,
            TEMPORAL_TLS_WORKER_KEY: certs.admin.key,
            TEMPORAL_TLS_SERVER_CA_CERT: certs.ca,
            TEMPORAL_TLS_SERVER_NAME: certs.serverName,
          }
        : {}),
    };
  }

  /**
   * Temporal's client environment (what settle, the temporal CLI and any SDK read): the address,
   * the namespace and, with mTLS, the CA, the server name and a client certificate unless `none`.
   */
  clientEnv(identity: Identity): Record<string, string> {
    const env: Record<string, string> = {
      TEMPORAL_ADDRESS: this.address,
      TEMPORAL_NAMESPACE: this.namespace,
    };
    const certs = this.certs;
    if (!certs) return env;
    env.TEMPORAL_TLS_SERVER_CA_CERT_PATH = certs.ca;
    env.TEMPORAL_TLS_SERVER_NAME = certs.serverName;
    if (identity !== 'none') {
      env.TEMPORAL_TLS_CLIENT_CERT_PATH = certs[identity].cert;
      env.TEMPORAL_TLS_CLIENT_KEY_PATH = certs[identity].key;
    }
    return env;
  }

  /** A Temporal client for this process (the invariant checker), as the operator. */
  connect(): Promise<Client> {
    const certs = this.certs;
    return operatorClient({
      address: this.address,
      namespace: this.namespace,
      tls: certs && { serverName: certs.serverName, ca: certs.ca, ...certs.admin },
      payloadKeys: this.options.payloadKeys,
    });
  }

  async startService(service: TemporalService): Promise<Child> {
    const port = this.serverPorts[`${service.toUpperCase()}_GRPC_PORT`]!;
    if (service === 'frontend') this.frontendMetricsPort ||= await this.ports.any();
    const child = await startProgram({
      name: `temporal ${service}`,
      command: this.tools.server,
      args: ['start', '--service', service],
      env: {
        ...this.serverEnv(),
        // The frontend counts the billable actions (its telemetry interceptor's `action` counter).
        ...(service === 'frontend' ? { PROMETHEUS_ENDPOINT: `127.0.0.1:${this.frontendMetricsPort}` } : {}),
      },
      logFile: this.path(`logs/temporal-${service}.log`),
      ready: () => listening(port),
    });
    this.services.set(service, child);
    return child;
  }

  /**
   * The server's own count of actions in the namespace so far, by `action_type`: the frontend's
   * `action` counter (its telemetry interceptor), the operations Temporal Cloud's billing is modelled
   * on; 1.32.2 counts a workflow task's markers once, as `command_BatchMarkers`.
   */
  async actionCounts(): Promise<Map<string, number>> {
    const response = await fetch(`http://127.0.0.1:${this.frontendMetricsPort}/metrics`, {
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`the frontend's /metrics answered ${response.status}`);
    const counts = new Map<string, number>();
    for (const line of (await response.text()).split('\n')) {
      const sample = /^action(?:_total)?\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!sample) continue;
      const labels = Object.fromEntries(
        [...sample[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
      );
      if (labels.namespace !== this.namespace) continue;
      const type = labels.action_type ?? 'unknown';
      counts.set(type, (counts.get(type) ?? 0) + Number(sample[2]));
    }
    return counts;
  }

  /** SIGTERM the service, wait for it to exit, start it again on the same ports. */
  async restartService(service: TemporalService): Promise<number | string> {
    const how = (await this.services.get(service)?.stop(30_000)) ?? 'not running';
    await this.startService(service);
    return how;
  }

  private async startUi(): Promise<void> {
    const ui = await this.startUiServer('topology', this.options.codecEndpoint);
    this.uiPort = ui.port;
    this.uiUrl = ui.url;
    this.log(`UI ${this.uiUrl}`);
  }

  /**
   * Another UI server on the same frontend, `name` its config's name, with or without a codec
   * endpoint (the topology compares what each shows); stopped by `stop()` with the cluster.
   */
  async startUiServer(name: string, codecEndpoint?: string) {
    const port = await this.ports.any();
    const dir = this.path(`ui-config-${name}`);
    mkdirSync(dir, { recursive: true });
    const certs = this.certs;
    // The UI server reads <config>/<env>.yaml; `enableUi: true` serves the bundled UI itself.
    writeFileSync(
      join(dir, `${name}.yaml`),
      [
        `temporalGrpcAddress: ${this.address}`,
        `port: ${port}`,
        'publicPath: ""',
        'enableUi: true',
        `defaultNamespace: ${this.namespace}`,
        'cors:',
        '  allowOrigins: []',
        'auth:',
        '  enabled: false',
        // The browser calls the codec server itself; without OIDC it has no access token to pass, so
        // the endpoint carries settle's codec token (docs/operations.md, "Payment data in Temporal").
        ...(codecEndpoint ? ['codec:', `  endpoint: ${codecEndpoint}`, '  passAccessToken: false'] : []),
        ...(certs
          ? [
              'tls:',
              `  caFile: ${certs.ca}`,
              `  certFile: ${certs.admin.cert}`,
              `  keyFile: ${certs.admin.key}`,
              '  enableHostVerification: true',
              `  serverName: ${certs.serverName}`,
            ]
          : []),
        '',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'base.yaml'), '');
    const program = await startProgram({
      name: `temporal ui-server (${name})`,
      command: this.tools.ui,
      args: ['--root', this.options.scratch, '--config', `ui-config-${name}`, '--env', name, 'start'],
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      logFile: this.path(`logs/ui-server-${name}.log`),
      ready: () => listening(port),
    });
    this.uis.push(program);
    return { port, url: `http://127.0.0.1:${port}`, program };
  }

  async stop(): Promise<void> {
    for (const ui of this.uis.splice(0)) await ui.stop(10_000).catch(() => {});
    // The frontend first, so no client starts new work while the rest stop.
    for (const service of ['frontend', 'worker', 'matching', 'history'] as const)
      await this.services
        .get(service)
        ?.stop(20_000)
        .catch(() => {});
    await this.postgres?.stop().catch(() => {});
  }
}

/**
 * A Temporal client as the operator: with `tls`, mTLS under the admin certificate; it holds the run's
 * payload keys, as settle's own clients do (runs carry an encrypted memo and encrypted payloads).
 */
export async function operatorClient(options: {
  address: string;
  namespace: string;
  tls?: { serverName: string; ca: string; cert: string; key: string };
  payloadKeys?: PayloadKey[];
}): Promise<Client> {
  const { tls } = options;
  const connection = await Connection.connect({
    address: options.address,
    tls: tls && {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: readFileSync(tls.ca),
      clientCertPair: { crt: readFileSync(tls.cert), key: readFileSync(tls.key) },
    },
  });
  const dataConverter = settleDataConverter({ payloadKeys: options.payloadKeys });
  return new Client({ connection, namespace: options.namespace, dataConverter });
}
