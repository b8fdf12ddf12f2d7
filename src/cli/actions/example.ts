import { randomBytes } from 'node:crypto';
import { addShipments } from '../../db/shipments';
import { sendExampleEvent } from '../../app/example';
import { loadSettings } from '../../config';
import { CliError, output, withDevServices } from '../context';
import { renderInspection } from './inspect';

export async function example(options: {
  id?: string;
  shipment?: string;
  type: string;
  json?: boolean;
}): Promise<void> {
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
