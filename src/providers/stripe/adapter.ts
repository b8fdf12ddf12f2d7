import Stripe from 'stripe';
import { isEventId } from '../../domain/ids';
import { fromProviderUnits, isIsoCurrency, isUnitCount, NOT_ISO_CURRENCY } from '../../domain/money';
import { stripeDecimals } from './units';
import type { PaymentEventType } from '../../domain/payment-event';
import {
  adaptedPaymentEvent,
  field,
  nonEmptyString,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
} from '../types';

/** Stripe's own default: a signature older than five minutes is refused (replay protection). */
const STRIPE_TOLERANCE_SECONDS = 300;

/** The Stripe event types settle acts on; enable exactly these on the webhook endpoint. */
const STRIPE_EVENT_TYPES: Record<string, PaymentEventType> = {
  'payment_intent.amount_capturable_updated': 'payment.authorized',
  'payment_intent.succeeded': 'payment.captured',
  'charge.captured': 'payment.captured',
  'charge.refunded': 'payment.refunded',
  'refund.created': 'payment.refunded',
  'payment_intent.payment_failed': 'payment.failed',
};

/** The types the recovery sweep lists (src/providers/stripe/recovery-source.ts): the ones settle acts on. */
export const STRIPE_ACTED_ON_TYPES: readonly string[] = Object.keys(STRIPE_EVENT_TYPES);

// Webhook verification and test signing need no API key and make no network call.
const stripe = new Stripe('sk_settle_webhook_verification_only');

/**
 * Stripe: one event per request, signed in `Stripe-Signature` (`t=…,v1=…[,v1=…]`: one v1 per active
 * endpoint secret while a secret is rolled). Verified with the `stripe` package's
 * `webhooks.constructEvent`, trying each configured secret; the key is the event ID (`evt_…`).
 */
export function createStripeAdapter(options: { secrets: string[] }): ProviderAdapter {
  return {
    name: 'stripe',
    verify(request: ProviderRequest) {
      if (options.secrets.length === 0) {
        return { ok: false, kind: 'signature', reason: 'no Stripe webhook secret is configured' };
      }
      const header = request.headers['stripe-signature'];
      if (typeof header !== 'string' || !header) {
        return { ok: false, kind: 'signature', reason: 'missing Stripe-Signature header' };
      }
      let reason = 'no v1 signature matches a configured secret';
      for (const secret of options.secrets) {
        try {
          const event = stripe.webhooks.constructEvent(
            request.rawBody,
            header,
            secret,
            STRIPE_TOLERANCE_SECONDS,
          );
          // Everything settle reads of the event is this object: the body the signature covers.
          return { ok: true, items: [event], mode: stripeMode(event) };
        } catch (error) {
          if (error instanceof SyntaxError) {
            return { ok: false, kind: 'malformed', reason: 'body is not valid JSON' };
          }
          const message = error instanceof Error ? error.message : '';
          if (/tolerance/i.test(message)) {
            reason = `timestamp outside the ${STRIPE_TOLERANCE_SECONDS} s tolerance`;
          } else if (/Unable to extract timestamp/i.test(message)) {
            return { ok: false, kind: 'signature', reason: 'malformed Stripe-Signature header' };
          }
        }
      }
      return { ok: false, kind: 'signature', reason };
    },
    exportItems(line: unknown) {
      return [line];
    },
    exportMode: stripeMode,
    adapt: adaptStripeEvent,
  };
}

/** `livemode` of a Stripe event (signed with the rest of the body): true is live, false is test. */
function stripeMode(event: unknown): ProviderMode | undefined {
  const livemode = field(event, 'livemode');
  if (livemode === true) return 'live';
  if (livemode === false) return 'test';
  return undefined;
}

/** Signs a body the way Stripe does (the `stripe` package's own test helper). */
export function signStripe(payload: string, secret: string, timestamp?: number): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

/** One Stripe event object (as sent, or one line of an events-list export) as settle sees it. */
export function adaptStripeEvent(item: unknown): AdaptedEvent {
  const id = field(item, 'id');
  if (!isEventId(id)) {
    return { kind: 'invalid', eventId: null, path: 'id', message: 'must be a Stripe event ID (evt_…)' };
  }
  const type = field(item, 'type');
  if (typeof type !== 'string' || !type) {
    return { kind: 'invalid', eventId: id, path: 'type', message: 'must be a Stripe event type' };
  }
  const target = STRIPE_EVENT_TYPES[type];
  if (!target)
    return { kind: 'ignored', eventId: id, providerType: type, reason: 'not a type settle acts on' };

  const object = field(item, 'data', 'object');
  const created = field(item, 'created');
  if (typeof created !== 'number' || !Number.isInteger(created) || created < 0) {
    return { kind: 'invalid', eventId: id, path: 'created', message: 'must be a Unix timestamp' };
  }

  let source: unknown = object;
  let amount: unknown;
  let refundId: string | undefined;
  switch (type) {
    case 'payment_intent.amount_capturable_updated':
      amount = field(object, 'amount_capturable') || field(object, 'amount');
      break;
    case 'payment_intent.succeeded':
      amount = field(object, 'amount_received') ?? field(object, 'amount');
      break;
    case 'charge.captured':
      amount = field(object, 'amount_captured') ?? field(object, 'amount');
      break;
    case 'payment_intent.payment_failed':
      amount = field(object, 'amount');
      break;
    case 'charge.refunded': {
      // The refund this event reports is the charge's newest refund object. Since API version
      // 2022-11-15 the charge in events carries no `refunds` list; then refund.created reports it.
      const refunds = field(object, 'refunds', 'data');
      const newest = Array.isArray(refunds)
        ? [...refunds].sort((a, b) => Number(field(b, 'created') ?? 0) - Number(field(a, 'created') ?? 0))[0]
        : undefined;
      if (!newest) {
        return {
          kind: 'ignored',
          eventId: id,
          providerType: type,
          reason:
            'the charge carries no refunds list (API version 2022-11-15 or later): refund.created reports the refund',
        };
      }
      refundId = nonEmptyString(field(newest, 'id'));
      amount = field(newest, 'amount');
      break;
    }
    case 'refund.created': {
      const status = field(object, 'status');
      if (status === 'failed' || status === 'canceled') {
        return { kind: 'ignored', eventId: id, providerType: type, reason: `the refund is ${status}` };
      }
      refundId = nonEmptyString(field(object, 'id'));
      amount = field(object, 'amount');
      source = object;
      break;
    }
  }

  const shipmentId = nonEmptyString(field(source, 'metadata', 'shipment_id'));
  if (!shipmentId) {
    const objectType = nonEmptyString(field(object, 'object')) ?? 'object';
    return {
      kind: 'unmatched',
      eventId: id,
      providerType: type,
      reason: `Stripe ${type} names no shipment: its ${objectType} has no metadata.shipment_id`,
      payload: item,
    };
  }
  const rawCurrency = field(type === 'charge.refunded' ? object : source, 'currency');
  const currency = typeof rawCurrency === 'string' ? rawCurrency.toUpperCase() : undefined;
  if (!isIsoCurrency(currency)) {
    return {
      kind: 'invalid',
      eventId: id,
      path: 'data.object.currency',
      message: NOT_ISO_CURRENCY,
    };
  }
  const rawAccount = field(item, 'account');
  if (rawAccount !== undefined && rawAccount !== null && typeof rawAccount !== 'string') {
    return { kind: 'invalid', eventId: id, path: 'account', message: 'must be a Stripe account ID' };
  }
  const account = nonEmptyString(rawAccount);
  const event = {
    id,
    type: target,
    created_at: new Date(created * 1000).toISOString(),
    data: {
      shipment_id: shipmentId,
      payment_id: paymentIdOf(type, object),
      // Stripe's units to ISO's; an amount that is no count of units is left for the schema to refuse.
      ...(isUnitCount(amount) ? fromProviderUnits(amount, stripeDecimals(currency), currency) : { amount }),
      currency,
      ...(refundId ? { refund_id: refundId } : {}),
      provider: 'stripe',
      provider_type: type,
      // A Connect event names its connected account (signed, like the whole body); the platform's own
      // events name none, and keep the shape (and payload hash) they had before accounts were read.
      ...(account !== undefined ? { provider_account: account } : {}),
    },
  };
  return adaptedPaymentEvent(id, type, event);
}

/**
 * The payment is the PaymentIntent (`pi_…`) wherever the object names one, so a
 * payment_intent.succeeded and a charge.captured of the same payment share one capture entry.
 */
function paymentIdOf(type: string, object: unknown): unknown {
  const reference = (value: unknown) => nonEmptyString(value) ?? nonEmptyString(field(value, 'id'));
  if (type.startsWith('payment_intent.')) return field(object, 'id');
  if (type === 'refund.created') {
    return reference(field(object, 'payment_intent')) ?? reference(field(object, 'charge'));
  }
  return reference(field(object, 'payment_intent')) ?? field(object, 'id');
}
