import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { hmacValidator as HmacValidator } from '@adyen/api-library';
import type { TestStack } from '../../testkit/harness';
import type { PaymentEvent } from '../../src/domain/payment-event';
import type { AdaptedEvent } from '../../src/providers/types';

// The providers' own libraries sign here, as the providers do; settle's code is not used to sign.
const stripe = new Stripe('sk_test_unused');
const adyenValidator = new HmacValidator();

export function newStripeSecret(): string {
  return `whsec_${randomBytes(24).toString('hex')}`;
}

/** A signing key of an HMAC provider (Checkout.com's secret key, Square's signature key). */
export function newHmacKey(): string {
  return randomBytes(16).toString('base64url');
}

export function newAdyenKey(): string {
  return randomBytes(32).toString('hex').toUpperCase();
}

export type Reply = { status: number; text: string; body: Record<string, unknown>; headers: Headers };

async function post(url: string, body: string, headers: Record<string, string>): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Adyen's acknowledgement is the plain text `[accepted]`.
  }
  return { status: response.status, text, body: parsed, headers: response.headers };
}

/** A Stripe event object as Stripe sends it (API version 2024-06-20). */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  overrides: { id?: string; created?: number; livemode?: boolean } = {},
): Record<string, unknown> {
  return {
    id: overrides.id ?? `evt_${randomBytes(12).toString('hex')}`,
    object: 'event',
    api_version: '2024-06-20',
    created: overrides.created ?? 1_786_000_000,
    data: { object },
    livemode: overrides.livemode ?? false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export function paymentIntent(
  shipmentId: string | undefined,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: `pi_${randomBytes(12).toString('hex')}`,
    object: 'payment_intent',
    amount: 12500,
    amount_capturable: 0,
    amount_received: 12500,
    currency: 'eur',
    status: 'succeeded',
    metadata: shipmentId ? { shipment_id: shipmentId } : {},
    ...overrides,
  };
}

/** POSTs a Stripe event, signed with the `stripe` package's test helper (what Stripe computes). */
export async function postStripe(
  stack: Pick<TestStack, 'gatewayUrl'>,
  event: unknown,
  options: { secret: string; timestamp?: number; rawBody?: string; header?: string },
): Promise<Reply> {
  const payload = JSON.stringify(event);
  const header =
    options.header ??
    stripe.webhooks.generateTestHeaderString({
      payload,
      secret: options.secret,
      timestamp: options.timestamp,
    });
  return post(`${stack.gatewayUrl}/webhooks/stripe`, options.rawBody ?? payload, {
    'stripe-signature': header,
  });
}

/** A `t=…,v1=…,v1=…` header as Stripe sends it while an endpoint secret is rolled. */
export function stripeRollHeader(payload: string, secrets: string[]): string {
  const timestamp = Math.floor(Date.now() / 1000);
  const signatures = secrets.map((secret) =>
    stripe.webhooks
      .generateTestHeaderString({ payload, secret, timestamp })
      .split(',')
      .find((part) => part.startsWith('v1='))!,
  );
  return [`t=${timestamp}`, ...signatures].join(',');
}

/** A NotificationRequestItem as Adyen sends it, unsigned. */
export function adyenItem(fields: {
  pspReference?: string;
  originalReference?: string;
  eventCode: string;
  success?: 'true' | 'false';
  merchantReference?: string;
  value?: number;
  currency?: string;
  additionalData?: Record<string, string>;
}): Record<string, unknown> {
  return {
    pspReference: fields.pspReference ?? randomBytes(8).toString('hex').toUpperCase(),
    ...(fields.originalReference ? { originalReference: fields.originalReference } : {}),
    merchantAccountCode: 'SettleTestECOM',
    merchantReference: fields.merchantReference ?? 'order-1',
    amount: { value: fields.value ?? 12500, currency: fields.currency ?? 'EUR' },
    eventCode: fields.eventCode,
    eventDate: '2026-08-10T02:14:00+02:00',
    success: fields.success ?? 'true',
    paymentMethod: 'visa',
    operations: ['CANCEL', 'CAPTURE', 'REFUND'],
    reason: '',
    additionalData: fields.additionalData ?? {},
  };
}

/** Signs an item with `@adyen/api-library`'s HmacValidator, into additionalData.hmacSignature. */
export function signAdyen(item: Record<string, unknown>, hexKey: string): Record<string, unknown> {
  const signature = adyenValidator.calculateHmac(item as never, hexKey);
  return { ...item, additionalData: { ...(item.additionalData as object), hmacSignature: signature } };
}

/** A batch as Adyen posts it; `live` is Adyen's string ("false" from a test account). */
export function adyenBatch(
  items: Record<string, unknown>[],
  live: 'true' | 'false' = 'false',
): Record<string, unknown> {
  return { live, notificationItems: items.map((item) => ({ NotificationRequestItem: item })) };
}

export async function postAdyen(
  stack: Pick<TestStack, 'gatewayUrl'>,
  body: unknown,
  options: { basicAuth?: string; rawBody?: string } = {},
): Promise<Reply> {
  return post(`${stack.gatewayUrl}/webhooks/adyen`, options.rawBody ?? JSON.stringify(body), {
    ...(options.basicAuth
      ? { authorization: `Basic ${Buffer.from(options.basicAuth).toString('base64')}` }
      : {}),
  });
}

/** Ledger entries of one kind for a shipment: what "one effect" means for money. */
export async function ledgerOf(
  stack: Pick<TestStack, 'pool'>,
  shipmentId: string,
): Promise<{ kind: string; amount: number; currency: string; event_id: string }[]> {
  const { rows } = await stack.pool.query<{
    kind: string;
    amount: string;
    currency: string;
    event_id: string;
  }>(`SELECT kind, amount, currency, event_id FROM ledger_entries WHERE shipment_id = $1 ORDER BY entry_id`, [
    shipmentId,
  ]);
  return rows.map((row) => ({ ...row, amount: Number(row.amount) }));
}

export async function paymentStatusOf(stack: Pick<TestStack, 'pool'>, shipmentId: string): Promise<string> {
  const { rows } = await stack.pool.query<{ payment_status: string }>(
    'SELECT payment_status FROM shipments WHERE shipment_id = $1',
    [shipmentId],
  );
  return rows[0]!.payment_status;
}

/**
 * The canonical amount fields an adapter made of a provider event (`amount`, `currency` and, for an
 * amount ISO cannot express, `amount_decimals`), or `invalid <path>` when it refused the event.
 */
export function adaptedAmount(adapted: AdaptedEvent): Record<string, unknown> | string {
  if (adapted.kind === 'invalid') return `invalid ${adapted.path}`;
  if (adapted.kind !== 'payment') return adapted.kind;
  const data: PaymentEvent['data'] = adapted.event.data;
  return {
    amount: data.amount,
    currency: data.currency,
    ...(data.amount_decimals !== undefined ? { amount_decimals: data.amount_decimals } : {}),
  };
}
