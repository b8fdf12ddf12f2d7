import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { CliError, importDevTool } from '../errors';
import { renderInspection } from './inspect';

export function registerExample(program: Command) {
  program
    .command('example')
    .description(
      'Send one signed example payment event to the running gateway (adding its shipment first), ' +
        'then show what it did. Run it twice with --id to see the duplicate path.',
    )
    .option('--id <event-id>', 'event ID to send (default: a new pay_example_… ID)')
    .option('--shipment <id>', 'shipment the payment is for (default: one of its own, SHP-<event suffix>)')
    .option('--type <type>', 'event type', 'payment.settled')
    .option('--json', 'print the response and the inspection as JSON')
    .action(async (options: { id?: string; shipment?: string; type: string; json?: boolean }) =>
      example(options),
    );
}

// The implementation: what it needs beyond commander is imported when the command runs.

async function example(options: {
  id?: string;
  shipment?: string;
  type: string;
  json?: boolean;
}): Promise<void> {
  const [{ addShipments }, { sendExampleEvent }, { loadSettings }, { output, withDevServices }] =
    await Promise.all([
      import('../../db/shipments.js'),
      importDevTool('example', () => import('../../stack/example.js')),
      import('../../config/index.js'),
      import('../context.js'),
    ]);
  await withDevServices(async ({ pool, client, config, env }) => {
    const secret = config.webhookSecrets[0];
    if (!secret) throw new CliError('SETTLE_WEBHOOK_SECRETS is not set and no development secret exists.');
    const gatewayUrl = loadSettings(env).gatewayUrl ?? `http://127.0.0.1:${config.port}`;
    const eventId = options.id ?? `pay_example_${randomBytes(4).toString('hex')}`;
    const shipmentId = options.shipment ?? `SHP-${eventId.slice(-8)}`;
    await addShipments(pool, [shipmentId]);

    const result = await sendExampleEvent(
      { pool, client },
      { gatewayUrl, secret, eventId, shipmentId, type: options.type },
    );
    if (!result) throw new CliError(`the gateway at ${gatewayUrl} did not answer; is \`npm start\` running?`);
    output(options.json, result, (r) =>
      [
        `POST ${gatewayUrl}/webhooks/payments → ${r.http_status} ${JSON.stringify(r.response)}`,
        '',
        r.inspection ? renderInspection(r.inspection) : 'no record yet: is a worker running?',
        '',
        `Again, as a duplicate: npx settle example --id ${eventId}`,
      ].join('\n'),
    );
  });
}
