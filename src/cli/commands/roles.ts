import type { Command } from 'commander';

/** `settle start`, `settle worker`, `settle gateway`, `settle serve`: the long-running processes. */
export function registerRoles(program: Command) {
  program
    .command('start')
    .description(
      'Run the whole stack on one machine: embedded PostgreSQL and a Temporal dev server with its UI ' +
        '(persisted under .settle/), migrations, a worker and the gateway, and a stand-in carrier and ERP ' +
        'unless SETTLE_CARRIER_URL or SETTLE_ERP_URL is set. Payloads are encrypted with a development key ' +
        '(unless SETTLE_PAYLOAD_KEYS is set) and a codec server on SETTLE_CODEC_PORT lets the UI show them ' +
        'decoded. What `npm start` runs.',
    )
    .action(async () => (await import('../actions/start.js')).start());

  program
    .command('worker')
    .description(
      'Run one worker process (polls SETTLE_TASK_QUEUE, and its -bulk twin for imports with ' +
        'SETTLE_BULK_CONCURRENCY slots); SIGTERM or SIGINT drains in-flight tasks, then ' +
        'exits (within 8 s whatever is left). Exits non-zero at start, naming the cause, when the ' +
        'namespace is missing, the credentials are refused or TLS fails. ' +
        'Serves /metrics on HOST:SETTLE_METRICS_PORT and ensures the daily claim purge Schedule. ' +
        'Runs the workflow bundle built once into .settle/cache; SETTLE_MAX_CACHED_WORKFLOWS bounds ' +
        'the runs it keeps in memory. Refuses to start without SETTLE_CARRIER_URL and SETTLE_ERP_URL, ' +
        'or without SETTLE_OUTBOUND_SECRET (it signs every downstream call; a target may have its own, ' +
        'SETTLE_CARRIER_SECRET, SETTLE_ERP_SECRET). ' +
        'Configured by its environment alone (never a running stack or the development secrets of .settle/).',
    )
    .action(async () => (await import('../actions/worker.js')).worker());

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
    .action(async () => (await import('../actions/roles.js')).gateway());

  program
    .command('serve')
    .description(
      'Run a gateway and a worker in one process on one Temporal connection, for the lowest latency: ' +
        "each payment's run is started eagerly, its first task handed by Temporal straight to this " +
        "process's worker (docs/performance.md). Configured as `settle gateway` and `settle worker` " +
        'together, by its environment alone; SIGTERM or SIGINT stops accepting, drains, and exits ' +
        'within 8 s.',
    )
    .action(async () => (await import('../actions/roles.js')).serve());
}
