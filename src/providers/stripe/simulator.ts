import type { PaymentEvent } from '../../domain/payment-event';
import type { SimulatedRequest } from '../module';
import { signStripe } from './adapter';

/** The request Stripe would send for a canonical event, signed with `secret` by Stripe's library. */
export function stripeRequestFor(secret: string, event: PaymentEvent): SimulatedRequest {
  const body = JSON.stringify(stripeEventFor(event));
  return {
    path: '/webhooks/stripe',
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(body, secret) },
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
