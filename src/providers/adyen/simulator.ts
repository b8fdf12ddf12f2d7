import type { PaymentEvent } from '../../domain/payment-event';
import type { SimulatedRequest } from '../module';
import { signAdyenItem } from './adapter';

/** The batch Adyen would send for a canonical event: one item, HMAC-signed, with basic auth if set. */
export function adyenRequestFor(
  signing: { hmacKey: string; basicAuth?: string },
  event: PaymentEvent,
): SimulatedRequest {
  const item = signAdyenItem(adyenItemFor(event), signing.hmacKey);
  const body = JSON.stringify({ live: 'false', notificationItems: [{ NotificationRequestItem: item }] });
  return {
    path: '/webhooks/adyen',
    body,
    headers: {
      'content-type': 'application/json',
      ...(signing.basicAuth
        ? { authorization: `Basic ${Buffer.from(signing.basicAuth).toString('base64')}` }
        : {}),
    },
  };
}

const ADYEN_CODES: Partial<Record<PaymentEvent['type'], [string, string]>> = {
  'payment.authorized': ['AUTHORISATION', 'true'],
  'payment.captured': ['CAPTURE', 'true'],
  'payment.refunded': ['REFUND', 'true'],
  'payment.failed': ['AUTHORISATION', 'false'],
};

function adyenItemFor(event: PaymentEvent): Record<string, unknown> {
  const { shipment_id, payment_id, amount, currency } = event.data;
  const [eventCode, success] = ADYEN_CODES[event.type] ?? ['CAPTURE', 'true'];
  const psp = (value: string) => value.replace(/[^A-Za-z0-9]/g, '').slice(-40);
  const authorisation = eventCode === 'AUTHORISATION';
  return {
    pspReference: authorisation ? psp(payment_id) : psp(event.id),
    ...(authorisation ? {} : { originalReference: psp(payment_id) }),
    merchantAccountCode: 'SettleSimulator',
    merchantReference: shipment_id,
    amount: { value: amount, currency },
    eventCode,
    eventDate: event.created_at,
    success,
    paymentMethod: 'visa',
    additionalData: {},
  };
}
