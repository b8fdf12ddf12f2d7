/**
 * Square as an HMAC provider (src/providers/hmac): every line below is from Square's own
 * documentation, cited in this folder's README.md.
 */
import type { HmacProviderSpec } from '../hmac/spec';

export const SQUARE_SPEC = {
  name: 'square',
  displayName: 'Square',
  route: '/webhooks/square',
  variables: { keys: 'SETTLE_SQUARE_SIGNATURE_KEYS', notificationUrl: 'SETTLE_SQUARE_NOTIFICATION_URL' },
  signature: {
    // The base64 HMAC-SHA256 of the subscription's notification URL followed by the raw body, keyed
    // with the subscription's signature key. The URL is the one configured, never the request's.
    header: { name: 'x-square-hmacsha256-signature', format: 'plain' },
    content: '{url}{body}',
    algorithm: 'sha256',
    encoding: 'base64',
  },
  fields: {
    eventId: '/event_id',
    type: '/type',
    createdAt: ['/created_at'],
    // A payment's reference_id is the merchant's key. Square's refund object has none, only the
    // payment_id it refunds: shipmentByPayment below takes that payment's shipment.
    shipment: ['/data/object/payment/reference_id'],
    paymentId: ['/data/object/payment/id', '/data/object/refund/payment_id'],
    refundId: ['/data/object/refund/id'],
    amount: ['/data/object/payment/amount_money/amount', '/data/object/refund/amount_money/amount'],
    currency: ['/data/object/payment/amount_money/currency', '/data/object/refund/amount_money/currency'],
    account: ['/merchant_id'],
  },
  types: {
    // A payment moves APPROVED (authorized, not yet completed) → COMPLETED (captured), or ends
    // CANCELED or FAILED; PENDING changes nothing yet.
    'payment.created': {
      status: '/data/object/payment/status',
      to: {
        APPROVED: 'payment.authorized',
        COMPLETED: 'payment.captured',
        CANCELED: 'payment.failed',
        FAILED: 'payment.failed',
      },
    },
    'payment.updated': {
      status: '/data/object/payment/status',
      to: {
        APPROVED: 'payment.authorized',
        COMPLETED: 'payment.captured',
        CANCELED: 'payment.failed',
        FAILED: 'payment.failed',
      },
    },
    // A refund is PENDING until COMPLETED; REJECTED and FAILED refunds move no money.
    'refund.created': { status: '/data/object/refund/status', to: { COMPLETED: 'payment.refunded' } },
    'refund.updated': { status: '/data/object/refund/status', to: { COMPLETED: 'payment.refunded' } },
  },
  // A refund takes the shipment settle recorded its payment's capture for, from Square's own events.
  shipmentByPayment: true,
  // Square's Money.amount is in the smallest denomination of the currency: ISO 4217's minor units.
  money: { kind: 'minor-units', decimals: 'iso' },
  // Every notification states the account environment that generated it.
  mode: { header: 'square-environment', live: 'Production', test: 'Sandbox' },
} as const satisfies HmacProviderSpec<'square'>;
