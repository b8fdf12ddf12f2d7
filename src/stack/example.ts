import { signWebhook } from '../lib/webhook-signature';
import { inspectEvent, type EventInspection } from '../app/inspect';
import type { Services } from '../app/services';

/** How long `settle example` waits for its event to be reconciled and its run to finish. */
const SETTLE_WAIT_MS = 15_000;
const POLL_MS = 200;

export type ExampleResult = {
  http_status: number;
  response: Record<string, unknown>;
  /** Undefined when the event was not reconciled in time (no worker running). */
  inspection: EventInspection | undefined;
};

/**
 * `settle example`: one payment event signed as the provider would, posted to the gateway, then what
 * it did once reconciled and its workflow done with the deliveries (or Temporal not answering).
 * Undefined when the gateway did not answer.
 */
export async function sendExampleEvent(
  deps: Pick<Services, 'pool' | 'client'>,
  example: { gatewayUrl: string; secret: string; eventId: string; shipmentId: string; type: string },
): Promise<ExampleResult | undefined> {
  const { eventId, shipmentId } = example;
  const body = JSON.stringify({
    id: eventId,
    type: example.type,
    created_at: '2026-08-10T02:14:00Z',
    data: { shipment_id: shipmentId, payment_id: `pi_${eventId}`, amount: 12500, currency: 'EUR' },
  });
  let response: Response;
  try {
    response = await fetch(`${example.gatewayUrl}/webhooks/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signWebhook(example.secret, `msg_${eventId}`, body) },
      body,
    });
  } catch {
    return undefined;
  }
  const reply = (await response.json()) as Record<string, unknown>;

  let inspection: EventInspection | undefined;
  const deadline = Date.now() + SETTLE_WAIT_MS;
  while (Date.now() < deadline) {
    inspection = await inspectEvent(deps.pool, deps.client, eventId);
    if (inspection?.outcome && inspection.workflow?.status !== 'RUNNING') break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return { http_status: response.status, response: reply, inspection };
}
