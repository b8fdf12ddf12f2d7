/**
 * The payment event's shape in plain code, for the workflow bundle. A workflow run used to evaluate its
 * bundle's modules afresh (the SDK's `reuseV8Context` gives each run a new module scope), so a
 * workflow that imported zod built zod and every schema again for each event (its CPU cost is in
 * docs/performance.md). The bundle now preloads its modules, once per worker thread
 * (worker-runtime/workflow-bundle.ts); these checks stay, and keep zod out of the sandbox. They accept
 * exactly what `paymentEventSchema` accepts (a unit test holds them to it on generated values); the
 * gateway and the reconcile activity keep using zod.
 */

import { ID_MAX_LENGTH, isEventId, isShipmentId } from './ids';

export { EVENT_ID_PATTERN, isEventId } from './ids';

export const PAYMENT_EVENT_TYPES = [
  'payment.authorized',
  'payment.captured',
  'payment.settled',
  'payment.refunded',
  'payment.failed',
] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

// zod 4's `z.iso.datetime({ offset: true })`: a calendar date (leap days included), a time with
// seconds and optional fraction, then `Z` or a ±hh:mm offset. Written out because zod's own regex
// module is not bundle-safe on its own; a unit test holds it to zod's (`regexes.datetime`).
const DATE = String.raw`(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))`;
const TIME = String.raw`(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?`;
const OFFSET = String.raw`(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)`;
export const RFC3339_PATTERN = new RegExp(`^${DATE}T${TIME}${OFFSET}$`);

const CURRENCY_PATTERN = /^[A-Z]{3}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isBoundedText(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= ID_MAX_LENGTH;
}

export function isHandledPaymentType(type: unknown): type is PaymentEventType {
  return (PAYMENT_EVENT_TYPES as readonly unknown[]).includes(type);
}

/** The fields settle acts on; unknown extra fields are kept, as the schema keeps them. */
export type PaymentEventShape = {
  id: string;
  type: PaymentEventType;
  created_at: string;
  data: { shipment_id: string; payment_id: string; amount: number; currency: string } & Record<
    string,
    unknown
  >;
} & Record<string, unknown>;

/** True exactly when `paymentEventSchema.safeParse(value).success` is. */
export function isPaymentEvent(value: unknown): value is PaymentEventShape {
  if (!isObject(value) || !isEventId(value.id) || !isHandledPaymentType(value.type)) return false;
  if (typeof value.created_at !== 'string' || !RFC3339_PATTERN.test(value.created_at)) return false;
  const data = value.data;
  if (!isObject(data) || !isShipmentId(data.shipment_id) || !isBoundedText(data.payment_id)) return false;
  const amount = data.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0) return false;
  return typeof data.currency === 'string' && CURRENCY_PATTERN.test(data.currency);
}
