import { createHmac, timingSafeEqual } from 'node:crypto';
import { isEventId } from '../../domain/ids';
import {
  fromProviderUnits,
  isIsoCurrency,
  isoMinorDigits,
  isUnitCount,
  NOT_ISO_CURRENCY,
  readDecimalText,
  type CanonicalAmount,
} from '../../domain/money';
import type { PaymentEventType } from '../../domain/payment-event';
import { sha256Hex } from '../../lib/hash';
import {
  adaptedPaymentEvent,
  nonEmptyString,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from '../types';
import { pointerPath, readPointer } from './json-pointer';
import type { HmacProviderSpec, JsonPointer, JsonPointers } from './spec';

/**
 * The adapter of an HMAC provider. Its `name` is the spec's; it is a `ProviderAdapter` once the
 * registry's provider names include it.
 */
export type HmacProviderAdapter<Name extends string> = Omit<ProviderAdapter, 'name'> & {
  readonly name: Name;
};

export type HmacAdapterOptions = {
  /** The configured keys (the spec's `variables.keys`): any one verifying passes. */
  keys: readonly string[];
  /** The notification URL as configured (the spec's `variables.notificationUrl`), for `{url}{body}`. */
  notificationUrl?: string;
  /** Now, in milliseconds since the epoch (the tolerance's reference); `Date.now` unless a test fixes it. */
  now?: () => number;
};

/** What signing needs beyond the body and the key: the URL and timestamp the scheme covers. */
export type HmacSigningContext = { url?: string; timestamp?: number };

/**
 * A `ProviderAdapter` for an HMAC provider declared by `spec`: verifies the raw body against each
 * configured key (constant-time), then reads each field where the spec says. A scheme that signs the
 * notification URL needs it configured: without one, or with an empty key, the adapter is not built
 * (a start-up error naming the variable).
 */
export function createHmacAdapter<Name extends string>(
  spec: HmacProviderSpec<Name>,
  options: HmacAdapterOptions,
): HmacProviderAdapter<Name> {
  checkSpec(spec);
  // An empty key would verify whatever anyone signs with an empty key.
  if (options.keys.some((key) => key.trim() === '')) {
    throw new Error(`${spec.variables.keys} has an empty key`);
  }
  if (spec.signature.content === '{url}{body}' && options.keys.length > 0 && !options.notificationUrl) {
    const variable = spec.variables.notificationUrl ?? 'the notification URL';
    throw new Error(`${spec.displayName} signs its notification URL: ${variable} must be set`);
  }
  const now = options.now ?? Date.now;
  return {
    name: spec.name,
    verify: (request) => verifyHmacRequest(spec, options, now(), request),
    exportItems: (line) => [line],
    // An export line is the event alone: only a mode stated in the body can be read from it.
    exportMode: (line) => (spec.mode && 'pointer' in spec.mode ? modeOf(spec, line, {}) : undefined),
    adapt: (item) => adaptHmacEvent(spec, item),
  };
}

/**
 * The header value `spec`'s provider would send for `body` signed with `key`: for simulators and
 * tests. `{url}{body}` needs `context.url`; a `pairs` header states `context.timestamp` (seconds,
 * now by default).
 */
export function signHmac(
  spec: HmacProviderSpec,
  body: string,
  key: string,
  context: HmacSigningContext = {},
): string {
  const { header, algorithm, encoding } = spec.signature;
  const timestamp = String(context.timestamp ?? Math.floor(Date.now() / 1000));
  const signature = createHmac(algorithm, key)
    .update(signedContent(spec, body, timestamp, context.url ?? ''))
    .digest(encoding);
  return header.format === 'plain'
    ? `${header.prefix ?? ''}${signature}`
    : `${header.timestampKey}=${timestamp},${header.signatureKey}=${signature}`;
}

/** A spec the engine cannot honour is a programming error, found when the adapter is built. */
function checkSpec(spec: HmacProviderSpec): void {
  const { header, content, toleranceSeconds } = spec.signature;
  if (content === '{timestamp}.{body}' && header.format !== 'pairs') {
    throw new Error(`${spec.name}: {timestamp}.{body} needs a pairs header that states the timestamp`);
  }
  if (header.format === 'pairs' && toleranceSeconds === undefined) {
    throw new Error(`${spec.name}: a signed timestamp needs toleranceSeconds`);
  }
}

function signedContent(spec: HmacProviderSpec, body: string, timestamp: string, url: string): string {
  switch (spec.signature.content) {
    case '{body}':
      return body;
    case '{timestamp}.{body}':
      return `${timestamp}.${body}`;
    case '{url}{body}':
      return `${url}${body}`;
  }
}

/** The signature header as read: the signatures it offers and the timestamp it states, or why not. */
type ReadHeader = { ok: true; signatures: string[]; timestamp: string } | { ok: false; reason: string };

function readSignatureHeader(spec: HmacProviderSpec, value: string): ReadHeader {
  const header = spec.signature.header;
  if (header.format === 'plain') {
    const text = value.trim();
    const prefix = header.prefix ?? '';
    if (!text.startsWith(prefix) || text.length === prefix.length) return malformedHeader(spec);
    return { ok: true, signatures: [text.slice(prefix.length)], timestamp: '' };
  }
  const timestamps: string[] = [];
  const signatures: string[] = [];
  for (const part of value.split(',')) {
    const at = part.indexOf('=');
    if (at <= 0) return malformedHeader(spec);
    const key = part.slice(0, at).trim();
    const text = part.slice(at + 1).trim();
    if (key === header.timestampKey) timestamps.push(text);
    else if (key === header.signatureKey) signatures.push(text);
  }
  const [timestamp] = timestamps;
  if (timestamps.length !== 1 || !timestamp || !/^\d{1,12}$/.test(timestamp) || !signatures.length) {
    return malformedHeader(spec);
  }
  return { ok: true, signatures, timestamp };
}

function malformedHeader(spec: HmacProviderSpec): ReadHeader {
  return { ok: false, reason: `malformed ${spec.signature.header.name} header` };
}

/** A presented signature as bytes, when it is text of the spec's encoding; undefined otherwise. */
function decodeSignature(spec: HmacProviderSpec, text: string): Buffer | undefined {
  if (spec.signature.encoding === 'hex') {
    return /^(?:[0-9a-fA-F]{2})+$/.test(text) ? Buffer.from(text, 'hex') : undefined;
  }
  // Padding is optional; the decoded length is held to the digest's by the comparison.
  return /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : undefined;
}

function verifyHmacRequest(
  spec: HmacProviderSpec,
  options: HmacAdapterOptions,
  nowMs: number,
  request: ProviderRequest,
): Verification {
  const headerName = spec.signature.header.name;
  if (options.keys.length === 0) {
    return {
      ok: false,
      kind: 'signature',
      reason: `no ${spec.displayName} key is configured (${spec.variables.keys})`,
    };
  }
  const value = request.headers[headerName.toLowerCase()];
  if (Array.isArray(value)) {
    return { ok: false, kind: 'signature', reason: `more than one ${headerName} header` };
  }
  if (typeof value !== 'string' || !value.trim()) {
    return { ok: false, kind: 'signature', reason: `missing ${headerName} header` };
  }
  const header = readSignatureHeader(spec, value);
  if (!header.ok) return { ok: false, kind: 'signature', reason: header.reason };

  const content = signedContent(spec, request.rawBody, header.timestamp, options.notificationUrl ?? '');
  const presented = header.signatures.map((text) => decodeSignature(spec, text));
  const matches = options.keys.some((key) => {
    const expected = createHmac(spec.signature.algorithm, key).update(content).digest();
    return presented.some(
      (signature) =>
        signature !== undefined &&
        signature.length === expected.length &&
        timingSafeEqual(signature, expected),
    );
  });
  if (!matches) {
    return {
      ok: false,
      kind: 'signature',
      reason: presented.every((signature) => signature === undefined)
        ? `malformed ${headerName} header`
        : `no ${headerName} signature matches a configured key`,
    };
  }
  const tolerance = spec.signature.toleranceSeconds;
  if (header.timestamp && tolerance !== undefined) {
    if (Math.abs(nowMs / 1000 - Number(header.timestamp)) > tolerance) {
      return { ok: false, kind: 'signature', reason: `timestamp outside the ${tolerance} s tolerance` };
    }
  }
  let body: unknown;
  try {
    body = JSON.parse(request.rawBody);
  } catch {
    return { ok: false, kind: 'malformed', reason: 'body is not valid JSON' };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, kind: 'malformed', reason: 'body is not a JSON object' };
  }
  return { ok: true, items: [body], mode: modeOf(spec, body, request.headers) };
}

/** The mode the event (or, for a header source, its request) states, or undefined. */
function modeOf(
  spec: HmacProviderSpec,
  body: unknown,
  headers: ProviderRequest['headers'],
): ProviderMode | undefined {
  const source = spec.mode;
  if (!source) return undefined;
  const stated =
    'pointer' in source ? readPointer(body, source.pointer) : headers[source.header.toLowerCase()];
  if (stated === source.live) return 'live';
  if (stated === source.test) return 'test';
  return undefined;
}

/**
 * The first candidate present in `item`, with the pointer it came from: neither undefined, nor null,
 * nor blank text (an empty `metadata.shipment_id` leaves the next candidate to speak).
 */
function firstPresent(
  item: unknown,
  pointers: JsonPointers,
): { pointer: JsonPointer; value: unknown } | undefined {
  for (const pointer of pointers) {
    const value = readPointer(item, pointer);
    const blank = typeof value === 'string' && value.trim() === '';
    if (value !== undefined && value !== null && !blank) return { pointer, value };
  }
  return undefined;
}

/**
 * settle's event ID of a provider event: `<name>:<the provider's event ID>`, so two providers'
 * IDs never meet, or `<name>:sha256:<hex>` where the provider's ID breaks settle's ID rule.
 */
export function hmacEventId(spec: HmacProviderSpec, providerEventId: string): string {
  const plain = `${spec.name}:${providerEventId}`;
  return isEventId(plain) ? plain : `${spec.name}:sha256:${sha256Hex(providerEventId)}`;
}

/** `value` in the provider's units as ISO minor units, or the refusal of a value that is none. */
function canonicalAmount(
  spec: HmacProviderSpec,
  value: unknown,
  currency: string,
): CanonicalAmount | { amount: unknown } | { message: string } {
  const money = spec.money;
  if (money.kind === 'decimal-text') {
    const stated = readDecimalText(value);
    if (!stated) return { message: 'must be a decimal amount such as "10.99", at most 15 digits' };
    return fromProviderUnits(stated.value, stated.decimals, currency);
  }
  // A value that is no count of units is left for the event schema to refuse, as the other adapters do.
  if (!isUnitCount(value)) return { amount: value };
  const decimals =
    money.exceptions?.[currency] ??
    (money.decimals === 'iso' ? (isoMinorDigits(currency) as number) : money.decimals);
  return fromProviderUnits(value, decimals, currency);
}

/**
 * One verified (or exported) event of `spec`'s provider, as settle sees it. `knownShipment`: the
 * shipment admission found for an event that names none (`spec.shipmentByPayment`).
 */
export function adaptHmacEvent(spec: HmacProviderSpec, item: unknown, knownShipment?: string): AdaptedEvent {
  const fields = spec.fields;
  const invalid = (eventId: string | null, pointer: JsonPointer, message: string): AdaptedEvent => ({
    kind: 'invalid',
    eventId,
    path: pointerPath(pointer),
    message,
  });

  const providerEventId = nonEmptyString(readPointer(item, fields.eventId));
  if (!providerEventId) {
    return invalid(null, fields.eventId, `must be a ${spec.displayName} event ID`);
  }
  const eventId = hmacEventId(spec, providerEventId);
  const type = nonEmptyString(readPointer(item, fields.type));
  if (!type) return invalid(eventId, fields.type, `must be a ${spec.displayName} event type`);
  const rule = Object.prototype.hasOwnProperty.call(spec.types, type) ? spec.types[type] : undefined;
  if (!rule) return { kind: 'ignored', eventId, providerType: type, reason: 'not a type settle acts on' };

  let target: PaymentEventType;
  let providerType = type;
  if ('status' in rule) {
    const status = nonEmptyString(readPointer(item, rule.status));
    if (!status) return invalid(eventId, rule.status, `must be a ${spec.displayName} status`);
    providerType = `${type}:${status}`;
    const mapped = Object.prototype.hasOwnProperty.call(rule.to, status) ? rule.to[status] : undefined;
    if (!mapped) {
      return {
        kind: 'ignored',
        eventId,
        providerType,
        reason: `a ${type} with status ${status} changes nothing`,
      };
    }
    target = mapped;
  } else {
    target = rule.to;
  }

  const shipment =
    knownShipment === undefined
      ? firstPresent(item, fields.shipment)
      : { pointer: fields.paymentId[0], value: knownShipment };
  if (!shipment) {
    const missing = `no ${fields.shipment.map(pointerPath).join(' or ')}`;
    const payment = spec.shipmentByPayment ? firstPresent(item, fields.paymentId) : undefined;
    const paymentId = typeof payment?.value === 'string' ? payment.value : undefined;
    return {
      kind: 'unmatched',
      eventId,
      providerType,
      reason: paymentId
        ? `${spec.displayName} ${type} names no shipment (${missing}), and settle has recorded no capture of its payment ${paymentId} from ${spec.displayName}`
        : `${spec.displayName} ${type} names no shipment: ${missing}`,
      payload: item,
      ...(paymentId
        ? {
            byPayment: {
              paymentId,
              eventIdPrefix: `${spec.name}:`,
              withShipment: (shipmentId: string) => adaptHmacEvent(spec, item, shipmentId),
            },
          }
        : {}),
    };
  }
  // A number or an object where the merchant's key belongs is refused, not read as no shipment.
  if (typeof shipment.value !== 'string') return invalid(eventId, shipment.pointer, 'must be a string');
  const shipmentId = shipment.value;

  const currencyAt = firstPresent(item, fields.currency);
  const currencyPointer = currencyAt?.pointer ?? fields.currency[0];
  if (!isIsoCurrency(currencyAt?.value)) return invalid(eventId, currencyPointer, NOT_ISO_CURRENCY);
  const currency = currencyAt.value;

  const amountAt = firstPresent(item, fields.amount);
  const amountPointer = amountAt?.pointer ?? fields.amount[0];
  const amount = canonicalAmount(spec, amountAt?.value, currency);
  if ('message' in amount) return invalid(eventId, amountPointer, amount.message);

  const createdAt = firstPresent(item, fields.createdAt);
  const paymentId = firstPresent(item, fields.paymentId);
  const refundId =
    target === 'payment.refunded' ? nonEmptyString(firstPresent(item, fields.refundId)?.value) : undefined;
  const account = fields.account ? nonEmptyString(firstPresent(item, fields.account)?.value) : undefined;

  const event = {
    id: eventId,
    type: target,
    created_at: createdAt?.value,
    data: {
      shipment_id: shipmentId,
      payment_id: paymentId?.value,
      ...amount,
      currency,
      ...(refundId ? { refund_id: `${spec.name}:${refundId}` } : {}),
      provider: spec.name,
      provider_type: providerType,
      ...(account ? { provider_account: account } : {}),
    },
  };
  // A canonical field the schema refuses is named where the provider keeps it.
  const providerPaths: Record<string, JsonPointer> = {
    id: fields.eventId,
    type: fields.type,
    created_at: createdAt?.pointer ?? fields.createdAt[0],
    'data.shipment_id': shipment.pointer,
    'data.payment_id': paymentId?.pointer ?? fields.paymentId[0],
    'data.amount': amountPointer,
    'data.currency': currencyPointer,
  };
  return adaptedPaymentEvent(eventId, providerType, event, (path) => {
    const pointer = providerPaths[path];
    return pointer === undefined ? path : pointerPath(pointer);
  });
}
