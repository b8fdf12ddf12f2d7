/**
 * The inverse of the engine, for `settle simulate` and tests: a canonical payment event written as
 * the provider's own event (each field at the pointer the spec reads it from, the amount in the
 * provider's units) and signed as the provider signs it. What it writes, the engine reads back as
 * the same canonical event.
 */
import { isoMinorDigits, formatUnits } from '../../domain/money';
import type { PaymentEvent, PaymentEventType } from '../../domain/payment-event';
import { signHmac, type HmacSigningContext } from './adapter';
import { pointerTokens, writePointer } from './json-pointer';
import type { HmacProviderSpec, JsonPointer, JsonPointers } from './spec';

/** A request as the provider would send it. */
export type SimulatedHmacRequest = { path: string; body: string; headers: Record<string, string> };

/** The provider type (and status, where the type is refined by one) the spec reads as `type`. */
function providerTypeOf(
  spec: HmacProviderSpec,
  type: PaymentEventType,
): { type: string; status?: { pointer: JsonPointer; value: string } } {
  for (const [providerType, rule] of Object.entries(spec.types)) {
    if (!('status' in rule)) {
      if (rule.to === type) return { type: providerType };
      continue;
    }
    const status = Object.entries(rule.to).find(([, to]) => to === type)?.[0];
    if (status !== undefined) return { type: providerType, status: { pointer: rule.status, value: status } };
  }
  throw new Error(`${spec.displayName} has no event type settle reads as ${type}`);
}

/** The provider's own ID behind a settle ID the engine derived (`<name>:<id>`), or the ID as given. */
function providerId(spec: HmacProviderSpec, id: string): string {
  return id.startsWith(`${spec.name}:`) ? id.slice(spec.name.length + 1) : id;
}

/**
 * The amount in the provider's units: ISO minor units (or the event's own `amount_decimals`) scaled
 * to the provider's decimals for the currency, or decimal text. Refused when the provider's units
 * cannot express it (a cent of CLP in whole pesos).
 */
function providerAmount(spec: HmacProviderSpec, data: PaymentEvent['data']): number | string {
  const iso = isoMinorDigits(data.currency);
  if (iso === undefined) throw new Error(`${data.currency} is not an ISO 4217 code`);
  const stated = typeof data.amount_decimals === 'number' ? data.amount_decimals : iso;
  const money = spec.money;
  if (money.kind === 'decimal-text') return formatUnits(data.amount, data.currency, stated);
  const decimals = money.exceptions?.[data.currency] ?? (money.decimals === 'iso' ? iso : money.decimals);
  if (decimals >= stated) return data.amount * 10 ** (decimals - stated);
  const divisor = 10 ** (stated - decimals);
  if (data.amount % divisor !== 0) {
    throw new Error(
      `${spec.displayName} counts ${data.currency} in ${decimals} decimals: ${data.amount} is not`,
    );
  }
  return data.amount / divisor;
}

/**
 * Of a field's candidates, the one inside the object the event's status is read from (Square's
 * refund, for a refund event), else the first.
 */
function candidate(pointers: JsonPointers, within: string | undefined): JsonPointer {
  return (within && pointers.find((pointer) => pointer.startsWith(`${within}/`))) || pointers[0];
}

/** `event` written as `spec`'s provider would send it (the body, before signing). */
export function hmacProviderEvent(spec: HmacProviderSpec, event: PaymentEvent): Record<string, unknown> {
  const { type, status } = providerTypeOf(spec, event.type);
  const within = status ? `/${pointerTokens(status.pointer).slice(0, -1).join('/')}` : undefined;
  const fields = spec.fields;
  const body: Record<string, unknown> = {};
  const write = (pointers: JsonPointers, value: unknown) => {
    if (value !== undefined) writePointer(body, candidate(pointers, within), value);
  };
  writePointer(body, fields.eventId, providerId(spec, event.id));
  writePointer(body, fields.type, type);
  if (status) writePointer(body, status.pointer, status.value);
  write(fields.createdAt, event.created_at);
  write(fields.shipment, event.data.shipment_id);
  write(fields.paymentId, event.data.payment_id);
  if (event.type === 'payment.refunded' && typeof event.data.refund_id === 'string') {
    write(fields.refundId, providerId(spec, event.data.refund_id));
  }
  write(fields.amount, providerAmount(spec, event.data));
  write(fields.currency, event.data.currency);
  if (fields.account && typeof event.data.provider_account === 'string') {
    write(fields.account, event.data.provider_account);
  }
  return body;
}

/**
 * The request `spec`'s provider would send for `event`, signed with `key` (`context`: the
 * notification URL and timestamp the scheme signs).
 */
export function simulateHmacRequest(
  spec: HmacProviderSpec,
  event: PaymentEvent,
  key: string,
  context: HmacSigningContext = {},
): SimulatedHmacRequest {
  const body = JSON.stringify(hmacProviderEvent(spec, event));
  return {
    path: spec.route,
    body,
    headers: {
      'content-type': 'application/json',
      [spec.signature.header.name.toLowerCase()]: signHmac(spec, body, key, context),
    },
  };
}
