import { timingSafeEqual } from 'node:crypto';
// The HMAC validator by its own module: the package index loads every API client and model, which
// would slow the gateway's start; the
// package declares no `exports`, so this path is public to Node.
import HmacValidator from '@adyen/api-library/lib/src/utils/hmacValidator';
import { isEventId } from '../../domain/ids';
import { isIsoCurrency, isUnitCount, NOT_ISO_CURRENCY } from '../../domain/money';
import { adyenToIso } from './units';
import type { PaymentEventType } from '../../domain/payment-event';
import { sha256Hex } from '../../lib/hash';
import {
  adaptedPaymentEvent,
  field,
  nonEmptyString,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from '../types';

const validator = new HmacValidator();

/** The body Adyen answers every acknowledged batch with (its documented acknowledgement). */
export const ADYEN_ACCEPTED = '[accepted]';

/**
 * What an item's HMAC covers (Adyen's notification signature: these values joined by `:`, in this
 * order). Everything else in an item (eventDate, paymentMethod, reason, operations, additionalData
 * but the signature itself) and the batch's `live` can be changed after signing without breaking it.
 */
export const ADYEN_SIGNED_FIELDS = [
  'pspReference',
  'originalReference',
  'merchantAccountCode',
  'merchantReference',
  'amount.value',
  'amount.currency',
  'eventCode',
  'success',
] as const;

/**
 * Adyen: a batch `{ live, notificationItems: [{ NotificationRequestItem }] }`, an HMAC per item in
 * `additionalData.hmacSignature`, verified with `@adyen/api-library`'s HmacValidator against each
 * configured key (hex) in turn; basic auth when configured. The key is pspReference + eventCode +
 * success. The HMAC covers ADYEN_SIGNED_FIELDS only: everything settle decides is read from them.
 */
export function createAdyenAdapter(options: { hmacKeys: string[]; basicAuth?: string }): ProviderAdapter {
  return {
    name: 'adyen',
    verify(request: ProviderRequest): Verification {
      if (
        options.basicAuth !== undefined &&
        !basicAuthMatches(request.headers.authorization, options.basicAuth)
      ) {
        return { ok: false, kind: 'unauthorized', reason: 'basic auth credentials refused' };
      }
      if (options.hmacKeys.length === 0) {
        return { ok: false, kind: 'signature', reason: 'no Adyen HMAC key is configured' };
      }
      let body: unknown;
      try {
        body = JSON.parse(request.rawBody);
      } catch {
        return { ok: false, kind: 'malformed', reason: 'body is not valid JSON' };
      }
      const wrapped = field(body, 'notificationItems');
      if (!Array.isArray(wrapped) || wrapped.length === 0) {
        return { ok: false, kind: 'malformed', reason: 'notificationItems: must be a non-empty array' };
      }
      const items: unknown[] = [];
      for (const [index, entry] of wrapped.entries()) {
        const item = field(entry, 'NotificationRequestItem');
        if (item === null || typeof item !== 'object') {
          return {
            ok: false,
            kind: 'malformed',
            reason: `notificationItems.${index}.NotificationRequestItem: must be an object`,
          };
        }
        if (!options.hmacKeys.some((key) => hmacMatches(item, key))) {
          return {
            ok: false,
            kind: 'signature',
            reason: `notificationItems.${index}: HMAC signature missing or matching no configured key`,
          };
        }
        const loose = looselySignedField(item);
        if (loose) {
          return {
            ok: false,
            kind: 'signature',
            reason: `notificationItems.${index}.NotificationRequestItem.${loose}: the HMAC does not fix this value`,
          };
        }
        items.push(item);
      }
      return { ok: true, items, mode: adyenMode(body) };
    },
    exportItems(line: unknown) {
      // A notification log line is one NotificationRequestItem, bare or wrapped as in the batch.
      return [field(line, 'NotificationRequestItem') ?? line];
    },
    // A wrapped line may carry its batch's `live` beside the item: `{"live":"false","NotificationRequestItem":{…}}`.
    exportMode: adyenMode,
    adapt: adaptAdyenItem,
  };
}

/**
 * The batch's `live` ("true" or "false", as Adyen sends it). Not covered by any item's HMAC: it only
 * ever makes settle ignore a batch (SETTLE_PROVIDER_MODE), never changes what an item does.
 */
function adyenMode(body: unknown): ProviderMode | undefined {
  const live = field(body, 'live');
  if (live === 'true' || live === true) return 'live';
  if (live === 'false' || live === false) return 'test';
  return undefined;
}

/**
 * A signed field whose value the HMAC does not pin down, or undefined. The signed text is the values
 * joined by `:` with nothing escaped, so a `:` inside one value lets its neighbour take part of it
 * (merchantAccountCode `Acct:SHP` with merchantReference `4821` signs as `Acct` with `SHP:4821`), and
 * an array or object signs as its text (`["SHP-A"]` as `SHP-A`). Adyen sends strings, and a number as
 * amount.value, with no `:` but in merchantReference (the merchant's own text, which may have them):
 * with every other value free of `:`, the signed text splits one way only.
 */
function looselySignedField(item: object): string | undefined {
  for (const path of ADYEN_SIGNED_FIELDS) {
    const value = field(item, ...path.split('.'));
    if (value === undefined || value === null) continue; // signed as empty text, read as absent
    if (typeof value === 'number' ? path !== 'amount.value' : typeof value !== 'string') return path;
    if (path !== 'merchantReference' && String(value).includes(':')) return path;
  }
  return undefined;
}

function hmacMatches(item: object, key: string): boolean {
  try {
    return validator.validateHMAC(item as Parameters<HmacValidator['validateHMAC']>[0], key);
  } catch {
    return false; // no hmacSignature, or a value the validator cannot read
  }
}

function basicAuthMatches(header: string | string[] | undefined, expected: string): boolean {
  if (typeof header !== 'string' || !header.startsWith('Basic ')) return false;
  const presented = Buffer.from(Buffer.from(header.slice(6), 'base64').toString('utf8'));
  const wanted = Buffer.from(expected);
  return presented.length === wanted.length && timingSafeEqual(presented, wanted);
}

/** Signs an item the way Adyen does: HmacValidator over its signed fields, into additionalData. */
export function signAdyenItem<T extends Record<string, unknown>>(item: T, hexKey: string): T {
  const unsigned = { ...item, additionalData: { ...(item.additionalData as object) } };
  const signature = validator.calculateHmac(unsigned as never, hexKey);
  return { ...unsigned, additionalData: { ...unsigned.additionalData, hmacSignature: signature } };
}

/**
 * The settle event ID of a notification: `adyen:<pspReference>:<eventCode>:<success>`, or, where that
 * would break settle's ID rule (1–200 of [A-Za-z0-9_.:-]), `adyen:sha256:<hex of the same triple>`.
 */
function adyenEventId(pspReference: string, eventCode: string, success: string): string {
  const plain = `adyen:${pspReference}:${eventCode}:${success}`;
  if (isEventId(plain)) return plain;
  return `adyen:sha256:${sha256Hex(JSON.stringify([pspReference, eventCode, success]))}`;
}

/** One NotificationRequestItem as settle sees it. */
export function adaptAdyenItem(item: unknown): AdaptedEvent {
  const pspReference = nonEmptyString(field(item, 'pspReference'));
  if (!pspReference) return invalid(null, 'pspReference', 'must be a non-empty string');
  const eventCode = nonEmptyString(field(item, 'eventCode'));
  if (!eventCode) return invalid(null, 'eventCode', 'must be a non-empty string');
  const success = field(item, 'success');
  if (success !== 'true' && success !== 'false') return invalid(null, 'success', 'must be "true" or "false"');
  const eventId = adyenEventId(pspReference, eventCode, success);
  const providerType = `${eventCode}:${success}`;

  const target = adyenTarget(eventCode, success === 'true');
  if (!target) {
    return {
      kind: 'ignored',
      eventId,
      providerType,
      reason:
        success === 'true'
          ? 'not an event code settle acts on'
          : `an unsuccessful ${eventCode} changes nothing`,
    };
  }

  // Every value that decides (shipment, payment, amount, currency, type, ID) is one the HMAC covers.
  // The shipment is merchantReference: additionalData (`metadata.*` included) is outside the HMAC, so
  // a copy of a signed item with another value there must not move its effect to another shipment.
  const merchantReference = field(item, 'merchantReference');
  if (
    merchantReference !== undefined &&
    merchantReference !== null &&
    typeof merchantReference !== 'string'
  ) {
    return invalid(eventId, 'merchantReference', 'must be a string');
  }
  const originalReference = field(item, 'originalReference');
  if (
    originalReference !== undefined &&
    originalReference !== null &&
    typeof originalReference !== 'string'
  ) {
    return invalid(eventId, 'originalReference', 'must be a string');
  }
  const merchantAccount = nonEmptyString(field(item, 'merchantAccountCode'));
  const shipmentId = nonEmptyString(merchantReference);
  if (!shipmentId) {
    return {
      kind: 'unmatched',
      eventId,
      providerType,
      reason: `Adyen ${eventCode} ${pspReference} names no shipment (no merchantReference)`,
      payload: item,
    };
  }
  const currency = field(item, 'amount', 'currency');
  if (!isIsoCurrency(currency)) return invalid(eventId, 'amount.currency', NOT_ISO_CURRENCY);
  const value = field(item, 'amount', 'value');
  const event = {
    id: eventId,
    type: target,
    // Not signed, and nothing is ordered by it (a payment's status moves forward by type alone): the
    // time Adyen gives, kept for people. A copy with another eventDate is a conflict, with no effect.
    created_at: field(item, 'eventDate'),
    data: {
      shipment_id: shipmentId,
      // The payment is the authorisation's pspReference; modifications name it in originalReference.
      payment_id:
        eventCode === 'AUTHORISATION' ? pspReference : (nonEmptyString(originalReference) ?? pspReference),
      // Adyen's units to ISO's; a value that is no count of units is left for the schema to refuse.
      ...(isUnitCount(value) ? adyenToIso(value, currency) : { amount: value }),
      currency,
      ...(eventCode === 'REFUND' ? { refund_id: `adyen:${pspReference}` } : {}),
      provider: 'adyen',
      provider_type: providerType,
      // Signed by the item's HMAC: which merchant account was paid (SETTLE_ADYEN_MERCHANT_ACCOUNTS).
      ...(merchantAccount !== undefined ? { provider_account: merchantAccount } : {}),
    },
  };
  return adaptedPaymentEvent(eventId, providerType, event, (path) =>
    path === 'created_at' ? 'eventDate' : path,
  );
}

/**
 * AUTHORISATION success=true → authorized, success=false → failed; CAPTURE → captured; REFUND →
 * refunded; CANCELLATION → failed (the authorisation was voided). An unsuccessful CAPTURE, REFUND or
 * CANCELLATION changes nothing (the payment stays where it was) and every other code is ignored.
 */
function adyenTarget(eventCode: string, success: boolean): PaymentEventType | undefined {
  if (eventCode === 'AUTHORISATION') return success ? 'payment.authorized' : 'payment.failed';
  if (!success) return undefined;
  if (eventCode === 'CAPTURE') return 'payment.captured';
  if (eventCode === 'REFUND') return 'payment.refunded';
  if (eventCode === 'CANCELLATION') return 'payment.failed';
  return undefined;
}

function invalid(eventId: string | null, path: string, message: string): AdaptedEvent {
  return { kind: 'invalid', eventId, path, message };
}
