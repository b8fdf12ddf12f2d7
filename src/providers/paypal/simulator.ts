import { randomUUID, sign } from 'node:crypto';
import { formatUnits } from '../../domain/money';
import type { PaymentEvent } from '../../domain/payment-event';
import type { SimulatedRequest } from '../module';
import { paypalSignedText } from './adapter';

/** What settle's own mapping reads each canonical type from (an authorization PayPal reports, settle ignores). */
const PAYPAL_TYPES: Partial<Record<PaymentEvent['type'], string>> = {
  'payment.authorized': 'PAYMENT.AUTHORIZATION.CREATED',
  'payment.captured': 'PAYMENT.CAPTURE.COMPLETED',
  'payment.refunded': 'PAYMENT.CAPTURE.REFUNDED',
  'payment.failed': 'PAYMENT.CAPTURE.DENIED',
};

/**
 * The delivery PayPal would send for a canonical event, signed as PayPal signs (RSA-SHA256 over
 * transmission ID, time, webhook ID and the body's CRC32) with `privateKeyPem`: the key of the
 * certificate the gateway verifies with (SETTLE_PAYPAL_CERT_PATH), since only PayPal holds its own.
 */
export function paypalRequestFor(
  signing: { webhookId: string; privateKeyPem: string },
  event: PaymentEvent,
): SimulatedRequest {
  const body = JSON.stringify(paypalEventFor(event));
  const transmissionId = randomUUID();
  const time = new Date().toISOString();
  const signature = sign(
    'sha256',
    Buffer.from(paypalSignedText(transmissionId, time, signing.webhookId, body)),
    signing.privateKeyPem,
  ).toString('base64');
  return {
    path: '/webhooks/paypal',
    body,
    headers: {
      'content-type': 'application/json',
      'paypal-transmission-id': transmissionId,
      'paypal-transmission-time': time,
      'paypal-transmission-sig': signature,
      // Never fetched: a gateway that takes simulated deliveries verifies with SETTLE_PAYPAL_CERT_PATH.
      'paypal-cert-url': 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-settle-simulator',
      'paypal-auth-algo': 'SHA256withRSA',
    },
  };
}

function paypalEventFor(event: PaymentEvent): Record<string, unknown> {
  const { shipment_id, payment_id, amount, currency } = event.data;
  const type = PAYPAL_TYPES[event.type] ?? 'PAYMENT.CAPTURE.COMPLETED';
  const value = { currency_code: currency, value: formatUnits(amount, currency) };
  const resource =
    type === 'PAYMENT.CAPTURE.REFUNDED'
      ? {
          id: `R${event.id}`,
          status: 'COMPLETED',
          amount: value,
          custom_id: shipment_id,
          links: [
            {
              href: `https://api.sandbox.paypal.com/v2/payments/captures/${payment_id}`,
              rel: 'up',
              method: 'GET',
            },
          ],
        }
      : { id: payment_id, status: 'COMPLETED', amount: value, custom_id: shipment_id, final_capture: true };
  const id = event.id;
  return {
    id,
    event_version: '1.0',
    create_time: event.created_at,
    resource_type: type === 'PAYMENT.CAPTURE.REFUNDED' ? 'refund' : 'capture',
    resource_version: '2.0',
    event_type: type,
    summary: `${type} (settle simulate)`,
    resource,
    links: [
      {
        href: `https://api.sandbox.paypal.com/v1/notifications/webhooks-events/${id}`,
        rel: 'self',
        method: 'GET',
      },
    ],
  };
}
