/**
 * Checkout.com as an HMAC provider (src/providers/hmac): every line below is from Checkout.com's own
 * documentation, cited in this folder's README.md.
 */
import type { HmacProviderSpec } from '../hmac/spec';

/**
 * Checkout.com's amount units ("Format the amount value", checkout.com/docs/resources/calculating-the-amount):
 * the full amount for the first list, the amount divided by 1000 for the second, divided by 100 for
 * every other currency. Checkout's rule, not ISO's: CLP (ISO 0) and CLF (ISO 4) are in neither list,
 * so Checkout counts them in hundredths.
 */
export const CHECKOUT_DECIMALS: Readonly<Record<string, number>> = {
  // The full amount.
  BIF: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  VUV: 0,
  VND: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  // The amount divided by 1000.
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
};

export const CHECKOUT_SPEC = {
  name: 'checkout',
  displayName: 'Checkout.com',
  route: '/webhooks/checkout',
  variables: { keys: 'SETTLE_CHECKOUT_WEBHOOK_SECRETS' },
  signature: {
    // The hex HMAC of the raw body with the webhook's secret key; no timestamp is signed.
    header: { name: 'Cko-Signature', format: 'plain' },
    content: '{body}',
    algorithm: 'sha256',
    encoding: 'hex',
  },
  fields: {
    eventId: '/id',
    type: '/type',
    // Older events state `created_on`; the current ones `timestamp`.
    createdAt: ['/created_on', '/timestamp', '/data/processed_on'],
    // The merchant's own key for the payment: its metadata's shipment_id when set, else its reference.
    shipment: ['/data/metadata/shipment_id', '/data/reference'],
    paymentId: ['/data/id'],
    // A refund is an action on the payment; its action_id names it.
    refundId: ['/data/action_id'],
    amount: ['/data/amount'],
    currency: ['/data/currency'],
  },
  types: {
    payment_approved: { to: 'payment.authorized' },
    payment_captured: { to: 'payment.captured' },
    payment_refunded: { to: 'payment.refunded' },
    payment_declined: { to: 'payment.failed' },
    // The authorization was voided: nothing will be captured.
    payment_voided: { to: 'payment.failed' },
  },
  money: { kind: 'minor-units', decimals: 2, exceptions: CHECKOUT_DECIMALS },
} as const satisfies HmacProviderSpec<'checkout'>;
