import type { Command } from 'commander';
import type { EventInspection } from '../../app/inspect';
import { CliError } from '../errors';

export function registerInspect(program: Command) {
  program
    .command('inspect')
    .description(
      'Show one event: claim, outcome, payload hash, workflow status, shipment, ledger, deliveries.',
    )
    .argument('<event-id>', "the provider's event ID, e.g. pay_7f3")
    .option('--json', 'print the same JSON as GET /events/<id>')
    .action(async (eventId: string, options: { json?: boolean }) => inspect(eventId, options));
}

// The implementation: what it needs beyond commander is imported when the command runs.

async function inspect(eventId: string, options: { json?: boolean }): Promise<void> {
  const [{ inspectEvent }, { createPool }, { commandConfig, output }] = await Promise.all([
    import('../../app/inspect.js'),
    import('../../db/pool.js'),
    import('../context.js'),
  ]);
  const { config } = commandConfig();
  const pool = createPool(config.databaseUrl, { max: 5 });
  // The database queries start first and the Temporal client loads and connects meanwhile (its module
  // loading is most of this command's time); a client that cannot connect fails the command as before.
  const connecting = import('../../client.js').then(({ connectClient }) => connectClient(config));
  let inspection: EventInspection | undefined;
  try {
    [inspection] = await Promise.all([inspectEvent(pool, connecting, eventId), connecting]);
  } finally {
    await connecting.then(
      (client) => client.connection.close().catch(() => {}),
      () => {},
    );
    await pool.end();
  }
  if (!inspection) {
    if (options.json)
      process.stdout.write(
        `${JSON.stringify({ status: 'rejected', error: 'not_found', event_id: eventId })}\n`,
      );
    throw new CliError(`no record of event ${eventId}`, 4);
  }
  output(options.json, inspection, renderInspection);
}

export function renderInspection(view: EventInspection): string {
  const lines = [
    `event       ${view.event_id} (${view.type ?? 'type unknown'})`,
    `outcome     ${view.outcome ?? 'not yet reconciled'}${view.claimed_at ? `   claimed ${view.claimed_at}` : ''}`,
    `payload     sha256 ${view.payload_sha256}`,
    `workflow    ${view.workflow_id}   ${
      view.workflow
        ? `${view.workflow.status} (run ${view.workflow.run_id}${
            view.workflow.version
              ? `, build ${view.workflow.version.build_id} of ${view.workflow.version.deployment}` +
                (view.workflow.version.behavior ? `, ${view.workflow.version.behavior}` : '')
              : ''
          })`
        : view.workflow_error
          ? `unknown: ${view.workflow_error_message ?? view.workflow_error}`
          : 'no longer kept by Temporal (the claim still decides)'
    }`,
    `shipment    ${
      view.shipment
        ? `${view.shipment.shipment_id}: payment ${view.shipment.payment_status}, hold ${view.shipment.hold_status}`
        : view.missing_shipment_id
          ? `${view.missing_shipment_id} does not exist (settle shipments add ${view.missing_shipment_id}, then settle replay ${view.event_id})`
          : 'none'
    }`,
    'ledger',
    ...(view.ledger.length
      ? view.ledger.map(
          (entry) =>
            `  #${entry.entry_id} ${entry.kind.padEnd(8)} ${entry.amount} ${entry.currency}   from ${entry.event_id}`,
        )
      : ['  (no entries)']),
    'deliveries',
    ...(view.deliveries.length
      ? view.deliveries.map(
          (d) =>
            `  ${`${d.target}.${d.action}`.padEnd(28)} ${d.status.padEnd(11)} attempts ${d.attempts}   key ${d.idempotency_key}${
              d.last_error ? `   last error: ${d.last_error}` : ''
            }`,
        )
      : ['  (none)']),
  ];
  return lines.join('\n');
}
