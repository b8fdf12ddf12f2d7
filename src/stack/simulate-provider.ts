import type { PaymentEvent } from '../domain/payment-event';
import { signAdyenItem } from '../providers/adyen';
import { signStripe } from '../providers/stripe';
import type { ProviderName } from '../providers/types';

/** How `settle simulate --provider` signs: the provider's own library, as the provider would. */
export type ProviderSigning =
  { name: 'stripe'; secret: string } | { name: 'adyen'; hmacKey: string; basicAuth?: string };

const PROVIDER_PATHS: Record<Exclude<ProviderName, 'paypal'>, string> = {
  stripe: '/webhooks/stripe',
  adyen: '/webhooks/adyen',
};

/** A canonical event dressed as the provider's own event (what the provider would send for it). */
export function providerRequestFor(
  signing: ProviderSigning,
  event: PaymentEvent,
): { path: string; body: string; headers: Record<string, string> } {
  if (signing.name === 'stripe') {
    const body = JSON.stringify(stripeEventFor(event));
    return {
      path: PROVIDER_PATHS.stripe,
      body,
      headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(body, signing.secret) },
    };
  }
  const item = signAdyenItem(adyenItemFor(event), signing.hmacKey);
  const body = JSON.stringify({ live: 'false', notificationItems: [{ NotificationRequestItem: item }] });
  return {
    path: PROVIDER_PATHS.adyen,
    body,
    headers: {
      'content-type': 'application/json',
      ...(signing.basicAuth
        ? { authorization: `Basic ${Buffer.from(signing.basicAuth).toString('base64')}` }
        : {}),
    },
  };
}

const STRIPE_TYPES: Partial<Record<PaymentEvent['type'], string>> = {
  'payment.authorized': 'payment_intent.amount_capturable_updated',
  'payment.captured': 'payment_intent.succeeded',
  'payment.refunded': 'refund.created',
  'payment.failed': 'payment_intent.payment_failed',
};

function stripeEventFor(event: PaymentEvent): Record<string, unknown> {
  const { shipment_id, payment_id, amount, currency } = event.data;
  const type = STRIPE_TYPES[event.type] ?? 'payment_intent.succeeded';
  const object =
    type === 'refund.created'
      ? {
          id: `re_${event.id.replace(/^evt_/, '')}`,
          object: 'refund',
          amount,
          currency: currency.toLowerCase(),
          payment_intent: payment_id,
          status: 'succeeded',
          metadata: { shipment_id },
        }
      : {
          id: payment_id,
          object: 'payment_intent',
          amount,
          amount_capturable: type === 'payment_intent.amount_capturable_updated' ? amount : 0,
          amount_received: type === 'payment_intent.succeeded' ? amount : 0,
          currency: currency.toLowerCase(),
          metadata: { shipment_id },
        };
  return {
    id: event.id,
    object: 'event',
    api_version: '2024-06-20',
    created: Math.floor(Date.parse(event.created_at) / 1000),
    livemode: false,
    pending_webhooks: 1,
    type,
    data: { object },
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
