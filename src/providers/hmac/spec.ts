/**
 * A payment provider that signs the raw body with an HMAC, declared as data: which header carries
 * the signature and how to read it, what is signed, with which algorithm and encoding, and where
 * each field settle needs lives in the provider's event (RFC 6901 JSON pointers). One engine
 * (./adapter.ts) turns a spec into a `ProviderAdapter`; a provider of this kind is a spec, its
 * fixtures and its tests, no code of its own.
 */
import type { PaymentEventType } from '../../domain/payment-event';

/** The HMAC's hash function (node:crypto names). */
export type HmacAlgorithm = 'sha256' | 'sha512' | 'sha1';

/** How the digest is written in the header. */
export type HmacEncoding = 'hex' | 'base64';

/**
 * What the HMAC covers, as the provider documents it: the raw body alone; the header's timestamp, a
 * dot and the body (Stripe's scheme); or the notification URL followed by the body (Square's).
 */
export type HmacSignedContent = '{body}' | '{timestamp}.{body}' | '{url}{body}';

/**
 * How the signature header reads: `plain` (the whole value is one signature, after `prefix` where
 * the provider writes one, as `sha256=` in `X-Hub-Signature-256`), or `pairs`
 * (`t=1700000000,v1=…,v1=…`: comma-separated `key=value` pairs, the timestamp once under
 * `timestampKey` and one or more signatures under `signatureKey`, one per active secret while the
 * provider rolls one).
 */
export type HmacSignatureHeader =
  | { name: string; format: 'plain'; prefix?: string }
  | { name: string; format: 'pairs'; timestampKey: string; signatureKey: string };

/** An RFC 6901 pointer into the provider's event (`/data/object/payment/id`). */
export type JsonPointer = string;

/** One or more pointers, tried in order. */
export type JsonPointers = readonly [JsonPointer, ...JsonPointer[]];

/**
 * What one provider event type becomes: a canonical type, or a canonical type chosen by a status
 * the event carries (Square's `payment.updated` by `data.object.payment.status`). A status the
 * table does not list changes nothing: the event is `ignored`, naming the status.
 */
export type HmacTypeRule =
  { to: PaymentEventType } | { status: JsonPointer; to: Readonly<Record<string, PaymentEventType>> };

/**
 * The provider's money units: integers counting minor units (ISO 4217's digits, unless `decimals`
 * gives a provider's own default, or `exceptions` a currency's own count), or decimal text of major
 * units (`"10.99"`), which states its own scale.
 */
export type HmacMoneyUnits =
  | {
      kind: 'minor-units';
      /** Decimals of a currency `exceptions` does not list: ISO 4217's, or the provider's one count. */
      decimals: 'iso' | number;
      /** A currency counted otherwise, by the provider's own documentation (cite it in the spec). */
      exceptions?: Readonly<Record<string, number>>;
    }
  | { kind: 'decimal-text' };

/**
 * Where a canonical field lives. Each is a list of candidates: the first one present in the event
 * (not undefined, not null) wins, so one spec reads both a payment's and a refund's object.
 */
export type HmacFieldPointers = {
  /** The provider's own event ID: its idempotency key, one per provider event. */
  eventId: JsonPointer;
  /** The provider's event type, the key of `types`. */
  type: JsonPointer;
  /** When the event happened, RFC 3339. */
  createdAt: JsonPointers;
  /** The merchant's shipment key (the payment's reference). None present: the event is `unmatched`. */
  shipment: JsonPointers;
  /** The payment the event belongs to (a refund names its payment). */
  paymentId: JsonPointers;
  /** The refund's own ID, read for events that become `payment.refunded`. */
  refundId: JsonPointers;
  /** The amount, in the provider's money units. */
  amount: JsonPointers;
  /** The ISO 4217 code of the amount. */
  currency: JsonPointers;
  /** The merchant or account paid, where the event names it; kept as `provider_account`. */
  account?: JsonPointers;
};

/**
 * The environment variables a provider is configured with, as data, so the configuration schema,
 * `.env.example` and every deploy file can be built from or checked against the spec. `keys` is a
 * secret (a `*_FILE` form too), a comma-separated list: several keys while one is rotated.
 */
export type HmacVariables = {
  keys: string;
  /** The notification URL the provider signs (`{url}{body}`), as configured, never from the request. */
  notificationUrl?: string;
};

/**
 * Where the provider states the environment an event belongs to (SETTLE_PROVIDER_MODE ignores the
 * other one): a pointer into the signed body, or a request header. A header is outside the
 * signature, as Adyen's batch `live` is: it can only make settle ignore an event, never change what
 * one does. A value that is neither `live` nor `test` states no mode.
 */
export type HmacModeSource =
  | { pointer: JsonPointer; live: string | boolean; test: string | boolean }
  | { header: string; live: string; test: string };

export type HmacProviderSpec<Name extends string = string> = {
  /** settle's name of the provider: the event's `data.provider`, metrics labels, the event ID's prefix. */
  name: Name;
  /** The provider as people call it, in refusals and reasons. */
  displayName: string;
  /** The webhook route (`/webhooks/<name>`). */
  route: `/webhooks/${string}`;
  variables: HmacVariables;
  signature: {
    header: HmacSignatureHeader;
    content: HmacSignedContent;
    algorithm: HmacAlgorithm;
    encoding: HmacEncoding;
    /** Seconds a signed timestamp may be away from now; required with `{timestamp}.{body}`. */
    toleranceSeconds?: number;
  };
  fields: HmacFieldPointers;
  /** The provider event types settle acts on; any other type is `ignored`. */
  types: Readonly<Record<string, HmacTypeRule>>;
  money: HmacMoneyUnits;
  /**
   * true: an event that names no shipment but names its payment (`fields.paymentId`) takes the
   * shipment settle recorded that payment's capture for, from this provider's own events (a refund
   * object that carries only the ID of the payment it refunds, as Square's). No capture recorded:
   * `unmatched`, as without it.
   */
  shipmentByPayment?: boolean;
  /** Where the event states live or test; absent: events state no mode. */
  mode?: HmacModeSource;
};
