import { isIsoCurrency, NOT_ISO_CURRENCY } from '../domain/money';
import { fieldIssues, paymentEventSchema, type PaymentEvent } from '../domain/payment-event';
import { findUnstorableJson } from '../domain/untrusted-json';

/**
 * The provider's environment an event belongs to: Stripe's `livemode` (signed, in the body), Adyen's
 * batch `live` (`"true"`/`"false"`, outside every item's HMAC), a provider's sandbox or live host in the
 * event's own links (signed body). SETTLE_PROVIDER_MODE picks one.
 */
export type ProviderMode = 'live' | 'test';

/**
 * What one provider event becomes. `eventId` is the settle event ID derived from the provider's
 * idempotency key (Stripe's `evt_…`; Adyen's pspReference + eventCode + success): every delivery of
 * the same provider event yields the same ID, so admission sees a repeat as a duplicate.
 */
export type AdaptedEvent =
  /** A canonical payment event; admitted through `admitPaymentEvent` like any other. */
  | { kind: 'payment'; eventId: string; providerType: string; event: PaymentEvent }
  /** A type settle does not act on (or an outcome that changes nothing, e.g. a failed capture). */
  | { kind: 'ignored'; eventId: string; providerType: string; reason: string }
  /**
   * Settle acts on the type but the event names no shipment: kept as an `unmatched` exception.
   * `byPayment`: it names its payment, whose shipment admission looks up (the shipment settle
   * recorded that payment's capture for, from an event whose ID starts `eventIdPrefix`, that is from
   * this provider); found, `withShipment` reads the event again naming it.
   */
  | {
      kind: 'unmatched';
      eventId: string;
      providerType: string;
      reason: string;
      payload: unknown;
      byPayment?: {
        paymentId: string;
        eventIdPrefix: string;
        withShipment(shipmentId: string): AdaptedEvent;
      };
    }
  /** Not an event of this provider's shape: refused with the field path. */
  | { kind: 'invalid'; eventId: string | null; path: string; message: string };

/** The request as the adapter needs it: the raw body (signatures cover bytes) and the headers. */
export type ProviderRequest = {
  rawBody: string;
  headers: Record<string, string | string[] | undefined>;
};

export type Verification =
  /**
   * Every item of the request, verified; one for Stripe, a batch for Adyen. `mode`: the one the
   * request states, undefined when it states none settle can read.
   */
  | {
      ok: true;
      items: unknown[];
      mode: ProviderMode | undefined;
      /**
       * The delivery's own ID, when the signature binds the body only weakly (one covering only a CRC32
       * of it): the route takes it once with the body's SHA-256, so no second body passes under it.
       */
      transmission?: { id: string; header: string };
    }
  /** `unauthorized`: basic auth refused; `signature`: a signature refused; `malformed`: not the provider's shape. */
  | { ok: false; kind: 'unauthorized' | 'signature' | 'malformed'; reason: string }
  /** What verifying needs from the provider (a signing certificate) could not be had: a 503, retried. */
  | { ok: false; kind: 'unavailable'; reason: string; retryAfterSeconds: number };

/**
 * What the provider's own API says of a verified event before it takes effect: `confirmed`, or
 * `differs` (the API has no such event, or another one: refused, never retried into success), or
 * `unavailable` (the API did not answer: a 503, nothing acknowledged).
 */
export type Confirmation =
  | { kind: 'confirmed' }
  | { kind: 'differs'; reason: string; fields: string[] }
  | { kind: 'unavailable'; reason: string; retryAfterSeconds: number };

/**
 * One payment provider: verify a request with the provider's own library, and turn each of its
 * events into settle's canonical payment event (or `ignored`/`unmatched`). Everything after the
 * adapter is the admission path every event takes (src/app/admit-payment-event.ts).
 */
export interface ProviderAdapter {
  /** The provider's key in the registry (src/providers/registry.ts). */
  readonly name: string;
  /**
   * Checks the request's signature(s); a refusal says why, never which secret was close. An adapter
   * may fetch (and cache) a signing certificate, so it answers a promise.
   */
  verify(request: ProviderRequest): Verification | Promise<Verification>;
  /** The items of one line of the provider's own export (`settle import --provider`); no signature. */
  exportItems(line: unknown): unknown[];
  /** The mode one line of the export states (as `verify` reads a request's), or undefined. */
  exportMode(line: unknown): ProviderMode | undefined;
  /** One verified (or exported) provider event, as settle sees it. */
  adapt(item: unknown): AdaptedEvent;
  /**
   * Set where the signature alone does not fix the deciding fields and settle holds API credentials
   * (a weakly bound signature): asks the provider's API for the event and compares what decides. Only for a webhook.
   */
  confirm?(adapted: Extract<AdaptedEvent, { kind: 'payment' | 'unmatched' }>): Promise<Confirmation>;
}

/**
 * The event as settle takes it under SETTLE_PROVIDER_MODE (`configured`): one that states the other
 * mode is ignored, whatever else it says, so it writes nothing (no event row, no run, no exception).
 * Unset, or an event that states no mode, it is as the adapter read it. One settle cannot read stays
 * a refusal: the mode is checked on a readable, verified event.
 */
export function inMode(
  adapted: AdaptedEvent,
  configured: ProviderMode | undefined,
  stated: ProviderMode | undefined,
): AdaptedEvent {
  if (configured === undefined || stated === undefined || stated === configured) return adapted;
  if (adapted.kind === 'invalid') return adapted;
  return {
    kind: 'ignored',
    eventId: adapted.eventId,
    providerType: adapted.providerType,
    reason: `a ${stated}-mode event, and SETTLE_PROVIDER_MODE is ${configured}`,
  };
}

/** A property of an unknown JSON value, or undefined. */
export function field(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim().length > 0 ? value : undefined;
}

/**
 * The end of every adapter: the canonical event it built, held to the edge rule (text PostgreSQL can
 * store, docs/limits.md), then to the payment event schema and to a currency ISO 4217 lists (each
 * adapter refuses one at its own field first; this holds every adapter to it). `providerField` names
 * a canonical field as the provider calls it, for the refusal.
 */
export function adaptedPaymentEvent(
  eventId: string,
  providerType: string,
  event: Record<string, unknown>,
  providerField: (path: string) => string = (path) => path,
): AdaptedEvent {
  const parsed = paymentEventSchema.safeParse(event);
  const issue =
    findUnstorableJson(event) ??
    (parsed.success ? undefined : fieldIssues(parsed.error)[0]) ??
    (isIsoCurrency(parsed.data?.data.currency)
      ? undefined
      : { path: 'data.currency', message: NOT_ISO_CURRENCY });
  if (issue) return { kind: 'invalid', eventId, path: providerField(issue.path), message: issue.message };
  return { kind: 'payment', eventId, providerType, event: event as PaymentEvent };
}
