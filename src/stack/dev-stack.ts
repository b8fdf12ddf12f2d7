import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadCodecConfig, startCodec } from '../roles/codec';
import { startServe } from '../roles/serve';
import { loadConfig, loadConfigPart, loadSettings } from '../config';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import {
  DELIVERY_TARGETS,
  OUTBOX_TARGETS,
  TARGET_SECRET_KEYS,
  targetUrl,
  type TargetConfigKey,
} from '../domain/outbox';
import { LISTENER_SETTINGS } from '../lib/listener-limits';
import { logger } from '../lib/logger';
import { onShutdown, SHUTDOWN_DEADLINE_MS, stopping, within } from '../lib/shutdown';
import { startDevDownstream, type DevDownstream } from './dev-downstream';
import { clearRunningStack, loadOrCreateDevSecrets, stateDir, writeRunningStack } from '../config/dev-state';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './embedded-postgres';
import { findTemporalCli } from './temporal-binaries';
import { startTemporalDevServer, type DevServer } from './temporal-dev-server';
import { startTracing, stopTracing } from '../tracing/tracing';
import { listeningOn } from '../config/port-in-use';

/** The share of the shutdown deadline (lib/shutdown.ts) settle's own parts get to drain. */
const PARTS_STOP_BUDGET_MS = SHUTDOWN_DEADLINE_MS / 2;
/** The servers' share, after the parts': each server named in the log when it outlasts it. */
const SERVERS_STOP_BUDGET_MS = SHUTDOWN_DEADLINE_MS / 2 - 500;
/** How long the Temporal dev server gets after SIGTERM before SIGKILL. */
const SERVER_STOP_GRACE_MS = SHUTDOWN_DEADLINE_MS / 4;
/** How long each of PostgreSQL's stop steps gets (fast, then immediate shutdown, then SIGKILL). */
const POSTGRES_STOP_STEP_MS = SHUTDOWN_DEADLINE_MS / 8;

/** One thing `settle start` stops, named for the log when it outlasts its share of the deadline. */
type Part = { name: string; stop: () => Promise<void> };

/**
 * `settle start` / `npm start`: everything on one machine. An embedded PostgreSQL and a Temporal dev
 * server (both persisted under .settle/, settle's search attributes registered) unless DATABASE_URL /
 * TEMPORAL_ADDRESS point elsewhere, a stand-in for the carrier or ERP whose URL is unset, then migrations, a
 * worker and the gateway in this process. Resolves when Ctrl-C (or SIGTERM) has
 * stopped it all.
 */
export async function runDevStack(): Promise<void> {
  // Ports of the one-machine stack (SETTLE_DEV_*_PORT), each movable when taken.
  const settings = loadSettings();
  const dir = stateDir();
  const displayPath = (path: string) => relative(process.cwd(), path) || '.';
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env };
  const secrets = loadOrCreateDevSecrets();
  // Each in place of an unset secret (neither the variable nor its <NAME>_FILE form set).
  const fill = (name: string, value: string) => {
    if (!env[name] && !env[`${name}_FILE`]) env[name] = value;
  };
  fill('SETTLE_WEBHOOK_SECRETS', secrets.webhookSecret);
  fill('SETTLE_API_TOKEN', secrets.apiToken);
  fill('SETTLE_OUTBOUND_SECRET', secrets.outboundSecret);
  fill('SETTLE_REMINDER_SECRET', secrets.reminderSecret);
  // Payloads encrypted as in production, with a development key; the UI reads them via the codec server.
  const devPayloadKey = !env.SETTLE_PAYLOAD_KEYS && !env.SETTLE_PAYLOAD_KEYS_FILE;
  if (devPayloadKey) env.SETTLE_PAYLOAD_KEYS = secrets.payloadKey;
  fill('SETTLE_CODEC_TOKEN', secrets.codecToken);

  // settle's own parts (gateway, worker, pool), stopped in reverse order of start; then the servers
  // they use (stand-in downstream, Temporal, PostgreSQL), together. Every wait is bounded, and what
  // outlasts its bound is named: a stop that ends at lib/shutdown.ts's deadline says why.
  const cleanups: Part[] = [];
  const serverStops: Part[] = [];
  const warnFailed = (name: string) => (error: unknown) =>
    logger.warn({ part: name, err: String(error) }, 'stop step failed');
  const stopAll = async () => {
    const parts = cleanups.splice(0).reverse();
    let current: string | undefined;
    const inOrder = (async () => {
      for (const part of parts) {
        current = part.name;
        await part.stop().catch(warnFailed(part.name));
      }
      current = undefined;
    })();
    // A drain that outlasts its share of the shutdown deadline must not leave the servers running.
    if (
      !(await within(
        inOrder.then(() => true),
        PARTS_STOP_BUDGET_MS,
        false,
      ))
    ) {
      logger.warn(
        { part: current, budgetMs: PARTS_STOP_BUDGET_MS },
        'still stopping after its share of the shutdown deadline; stopping the servers anyway',
      );
    }
    await Promise.all(
      serverStops.splice(0).map(async (server) => {
        const stopped = server.stop().then(() => true, warnFailed(server.name));
        if ((await within(stopped, SERVERS_STOP_BUDGET_MS, 'late')) === 'late') {
          logger.warn(
            { server: server.name, budgetMs: SERVERS_STOP_BUDGET_MS },
            'server still stopping after its share of the shutdown deadline',
          );
        }
      }),
    );
  };
  // Ctrl-C or SIGTERM (lib/shutdown.ts) stops it all: what has started at once, and a start still
  // under way at its next step (each `checkpoint`), which stops what it started since.
  let startSettled!: () => void;
  const started = new Promise<void>((resolve) => (startSettled = resolve));
  const stopped = new Promise<void>((resolve) => {
    onShutdown('settle start (gateway, worker, Temporal dev server, PostgreSQL)', () =>
      stopAll()
        .then(() => started)
        .then(resolve),
    );
  });
  const checkpoint = () => {
    if (stopping.aborted) throw stopping.reason;
  };

  try {
    // Before any Temporal client or worker is made; its spans flush after the parts have stopped.
    await startTracing('start', env);
    cleanups.push({ name: 'tracing', stop: () => stopTracing() });
    checkpoint();
    // First, so the UI can be started pointed at it (the browser calls it, not the dev server).
    const codecConfig = loadCodecConfig(env);
    const uiOrigins = [
      `http://127.0.0.1:${settings.devTemporalUiPort}`,
      `http://localhost:${settings.devTemporalUiPort}`,
    ];
    const codec = await startCodec(codecConfig, uiOrigins);
    serverStops.push({ name: 'codec server', stop: () => codec.close() });
    checkpoint();
    // The dev server's UI has no sign-in, so no access token to pass and no header to set: its
    // endpoint carries the token as a path segment (docs/operations.md, "Payment data in Temporal").
    const uiCodecEndpoint = `${codec.url}/${codecConfig.codecToken!}`;

    let postgres: EmbeddedDatabase | undefined;
    if (!env.DATABASE_URL) {
      const port = settings.devPostgresPort;
      postgres = await startEmbeddedPostgres({ dataDir: join(dir, 'postgres'), port });
      serverStops.push({ name: 'PostgreSQL', stop: () => postgres!.stop(POSTGRES_STOP_STEP_MS) });
      await postgres.createDatabase('settle');
      checkpoint();
      env.DATABASE_URL = postgres.urlFor('settle');
    }
    let temporal: DevServer | undefined;
    if (!env.TEMPORAL_ADDRESS && !env.TEMPORAL_PROFILE && !env.TEMPORAL_CONFIG_FILE) {
      temporal = await startTemporalDevServer({
        cliPath: await findTemporalCli(),
        port: settings.devTemporalPort,
        uiPort: settings.devTemporalUiPort,
        uiCodecEndpoint,
        dbFile: join(dir, 'temporal.db'),
        // WAL with every commit still fsynced: fewer syncs per commit than SQLite's rollback journal,
        // as durable (docs/performance.md has what each journal mode costs).
        sqlitePragmas: ['journal_mode=wal', 'synchronous=full'],
        namespace: env.TEMPORAL_NAMESPACE || 'default',
      });
      serverStops.push({
        name: 'Temporal dev server',
        stop: () => temporal!.stop(SERVER_STOP_GRACE_MS),
      });
      env.TEMPORAL_ADDRESS = temporal.address;
      checkpoint();
    }

    // The stand-ins take the place of whichever target is unset: the worker needs every one.
    let downstream: DevDownstream | undefined;
    if (OUTBOX_TARGETS.some((target) => !env[DELIVERY_TARGETS[target].variable])) {
      // It verifies with the secrets the worker signs with, read as the worker reads them.
      const signing = loadConfigPart(['outboundSecret', ...TARGET_SECRET_KEYS], env);
      downstream = await listeningOn(
        'SETTLE_DEV_DOWNSTREAM_PORT',
        settings.devDownstreamPort,
        startDevDownstream(settings.devDownstreamPort, signing, loadConfigPart(LISTENER_SETTINGS, env)),
      );
      serverStops.push({ name: 'stand-in downstream', stop: () => downstream!.close() });
      for (const target of OUTBOX_TARGETS)
        env[DELIVERY_TARGETS[target].variable] ||= `${downstream.url}/${target}`;
    }

    // settle's own dev server takes a plain connection; any other Temporal, its whole configuration.
    const config = loadConfig(env, { temporal: temporal ? 'dev-stack' : 'environment' });
    const pool = createPool(config.databaseUrl);
    cleanups.push({ name: 'PostgreSQL pool', stop: () => pool.end() });
    // Its own embedded PostgreSQL has no other settle process on it (the one before this start has
    // stopped), so the contract migrations apply too; a DATABASE_URL may be shared, and gets expand.
    const migrations = await migrate(pool, { contract: postgres !== undefined });
    checkpoint();

    // The gateway and the worker in this process on one Temporal connection, as `settle serve`
    // (roles/serve.ts): each new run's first task goes straight back to this worker (eager start).
    const serve = await startServe({ config, pool });
    cleanups.push({ name: 'gateway and worker', stop: () => serve.stop() });
    checkpoint();

    writeRunningStack({
      pid: process.pid,
      databaseUrl: config.databaseUrl,
      temporalAddress: config.temporalAddress,
      temporalUiUrl: temporal?.uiUrl ?? null,
      temporalDevServer: temporal !== undefined,
      gatewayUrl: serve.url,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      devPayloadKey,
    });
    cleanups.push({ name: 'running-stack file', stop: async () => clearRunningStack() });

    process.stdout.write(
      [
        '',
        'settle is running.',
        `  gateway      ${serve.url}   (POST /webhooks/payments, GET /events/<id>, /healthz, /readyz, /metrics with the API token, /openapi.json)`,
        `  temporal     ${config.temporalAddress}${temporal ? `   UI ${temporal.uiUrl}` : ''}   namespace ${config.temporalNamespace}, task queue ${config.taskQueue}`,
        `  postgres     ${postgres ? `embedded on 127.0.0.1:${postgres.port}, data in ${displayPath(join(dir, 'postgres'))}` : 'from DATABASE_URL'}`,
        `  migrations   ${migrations.applied.length ? `applied ${migrations.applied.join(', ')}` : 'up to date'}${
          migrations.heldBack.length
            ? `; held back until \`settle migrate --contract\`: ${migrations.heldBack.join(', ')}`
            : ''
        }`,
        `  downstream   ${describeDownstream(config, downstream)}`,
        `  codec        ${codec.url}   payloads encrypted (key ${config.payloadKeys![0]!.id}); the UI decodes through it`,
        `  secrets      development webhook secret, outbound signing secret, API token, payload key and codec token in ${displayPath(join(dir, 'dev-secrets.json'))}`,
        '',
        'Send a signed example event (in another terminal, in this folder):',
        '  npx settle example',
        '',
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  } catch (error) {
    await stopAll();
    startSettled();
    // Stopped by a signal while starting: a stop, not a failure.
    if (stopping.aborted) return;
    throw error;
  }
  startSettled();
  await stopped;
}

/** The start banner's downstream line: which targets are `npm start`'s stand-ins and which are real. */
function describeDownstream(
  config: Partial<Record<TargetConfigKey, string>>,
  downstream: DevDownstream | undefined,
): string {
  const standIn = (url: string | undefined) => downstream !== undefined && url?.startsWith(downstream.url);
  const targets = OUTBOX_TARGETS.map((target) => ({
    ...DELIVERY_TARGETS[target],
    url: targetUrl(config, target),
  }));
  const note = `answers 200, once per Idempotency-Key; set ${targets.map((t) => t.variable).join(' and ')} for real ones`;
  if (targets.every((target) => standIn(target.url))) {
    return `stand-in ${targets.map((t) => t.label).join(' and ')} at ${downstream!.url} (${note})`;
  }
  return targets
    .map((t) => (standIn(t.url) ? `stand-in ${t.label} at ${t.url} (${note})` : `${t.label} ${t.url}`))
    .join(', ');
}
