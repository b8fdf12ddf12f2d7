import { X509Certificate, verify as verifySignature } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { crc32 } from 'node:zlib';
import { isEventId } from '../../domain/ids';
import { fromProviderUnits, isIsoCurrency, NOT_ISO_CURRENCY, readDecimalText } from '../../domain/money';
import type { PaymentEventType } from '../../domain/payment-event';
import { readBoundedText } from '../../lib/bounded-text';
import { canonicalJson } from '../../lib/canonical-json';
import type { PaypalRest } from './rest';
import { RecoveryFault } from '../recovery-source';
import {
  adaptedPaymentEvent,
  field,
  nonEmptyString,
  type AdaptedEvent,
  type Confirmation,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from '../types';

/** The same replay window as Stripe's: a transmission more than five minutes from now is refused. */
export const PAYPAL_TOLERANCE_SECONDS = 300;

/** The one algorithm PayPal signs webhooks with (`PAYPAL-AUTH-ALGO`). */
const PAYPAL_AUTH_ALGO = 'SHA256withRSA';

/** A fetched certificate chain larger than this is refused (PayPal's is about 4 KiB). */
const CERT_MAX_BYTES = 64 * 1024;
/** One certificate fetch's limit; past it the delivery is a 503 (PayPal retries it). */
const CERT_FETCH_TIMEOUT_MS = 5_000;
/** Certificates kept (each until it expires or a day has passed, whichever is first). */
const CERT_CACHE_ENTRIES = 16;
const CERT_CACHE_MS = 24 * 3_600_000;
/**
 * A certificate URL that failed (not fetched, or refused) is not fetched again for this long: a
 * blocked egress or a flood naming one URL costs one fetch per window. Also the 503's Retry-After.
 */
const CERT_FAILURE_CACHE_MS = 30_000;
/** PayPal's transmission IDs are UUIDs; anything longer than this is no transmission of PayPal's. */
const TRANSMISSION_ID_MAX = 200;

/**
 * The PayPal event types settle acts on; subscribe the webhook to exactly these. A reversal (PayPal
 * took the money back, e.g. a chargeback decided for the buyer) is a refund of the capture; a dispute
 * opened fails a payment not yet captured and, as status never moves backwards, changes nothing on a
 * captured one (the money moves only with PAYMENT.CAPTURE.REVERSED or a refund).
 */
const PAYPAL_EVENT_TYPES: Record<string, PaymentEventType> = {
  'PAYMENT.CAPTURE.COMPLETED': 'payment.captured',
  'PAYMENT.CAPTURE.DENIED': 'payment.failed',
  'PAYMENT.CAPTURE.REFUNDED': 'payment.refunded',
  'PAYMENT.CAPTURE.REVERSED': 'payment.refunded',
  'CUSTOMER.DISPUTE.CREATED': 'payment.failed',
};

/**
 * Types PayPal sends that settle acknowledges and leaves alone, each with why: a pending capture
 * moves no money (COMPLETED or DENIED follows), and a dispute's resolution moves none either (the
 * buyer's win arrives as PAYMENT.CAPTURE.REVERSED, a refund; the seller's changes nothing, and a
 * payment the dispute failed stays failed, as nothing leaves `failed`).
 */
const PAYPAL_IGNORED_TYPES: Record<string, (item: unknown) => string> = {
  'PAYMENT.CAPTURE.PENDING': (item) =>
    `a pending capture moves no money (${said(field(item, 'resource', 'status_details', 'reason'))}): PAYMENT.CAPTURE.COMPLETED or PAYMENT.CAPTURE.DENIED follows`,
  'CUSTOMER.DISPUTE.RESOLVED': (item) =>
    `a dispute resolved (${said(field(item, 'resource', 'dispute_outcome', 'outcome_code'))}) moves no money: the buyer's win arrives as PAYMENT.CAPTURE.REVERSED`,
};

/** A code PayPal states in the body, as an ignored event's reason quotes it: a short word, or `none given`. */
function said(value: unknown): string {
  return typeof value === 'string' && /^[A-Z0-9_]{1,64}$/.test(value) ? value : 'none given';
}

/** The types the recovery sweep keeps from PayPal's list (src/providers/paypal/recovery-source.ts). */
export const PAYPAL_ACTED_ON_TYPES: readonly string[] = Object.keys(PAYPAL_EVENT_TYPES);

export type PaypalAdapterOptions = {
  /**
   * SETTLE_PAYPAL_WEBHOOK_ID and SETTLE_PAYPAL_WEBHOOK_IDS: a delivery signed for any of them is
   * taken (several while rotating; PayPal's simulator's `WEBHOOK_ID` only when listed). None: every
   * request is refused.
   */
  webhookIds?: readonly string[];
  /** One webhook ID, as `webhookIds: [webhookId]`. */
  webhookId?: string;
  /** SETTLE_PAYPAL_CERT_PATH's PEM: signatures are verified with it and nothing is fetched. */
  certificatePem?: string;
  /**
   * Tests only: fetch a (PayPal) certificate URL's path from this loopback origin instead. Refused
   * for any other host, so it can never point the fetch outside this machine.
   */
  certOrigin?: string;
  /** PEMs a fetched chain must end in; default: Node's bundled root CAs (PayPal's is DigiCert). */
  trustedCas?: string[];
  /**
   * PayPal's REST API (with SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET): each event
   * that would take effect is fetched by its ID and its deciding fields compared before it is
   * admitted. Unset: the body's CRC32 is all that binds it (docs/providers.md).
   */
  api?: PaypalRest;
  now?: () => number;
};

/** A certificate URL's fetch: pending (until Infinity), done, or failed (kept briefly). */
type CachedCertificate = { result: Promise<X509Certificate>; until: number };

/**
 * PayPal: one event per request, signed with RSA-SHA256 over
 * `<PAYPAL-TRANSMISSION-ID>|<PAYPAL-TRANSMISSION-TIME>|<webhook ID>|<CRC32 of the body, unsigned decimal>`
 * with the certificate at `PAYPAL-CERT-URL` (an https URL on a paypal.com host, fetched with a time
 * and size bound, its chain checked against trusted roots, cached) or, offline, the configured one.
 * The key is PayPal's event ID (`WH-…`). The body is covered through its CRC32 only, which is no
 * cryptographic hash: the transmission ID is handed to the route to be taken once with the body's
 * SHA-256, and with `api` each event is confirmed by PayPal's API (docs/providers.md).
 */
export function createPaypalAdapter(options: PaypalAdapterOptions): ProviderAdapter {
  const now = options.now ?? Date.now;
  const webhookIds = [
    ...new Set([...(options.webhookIds ?? []), ...(options.webhookId ? [options.webhookId] : [])]),
  ];
  const cache = new Map<string, CachedCertificate>();
  const offline = options.certificatePem ? firstCertificate(options.certificatePem) : undefined;
  if (options.certOrigin !== undefined && !isLoopbackOrigin(options.certOrigin)) {
    throw new Error('certOrigin must be an http(s) loopback origin (tests only)');
  }
  const anchors = (options.trustedCas ?? [...rootCertificates]).map((pem) => new X509Certificate(pem));

  async function certificateFor(url: URL): Promise<X509Certificate> {
    if (offline) {
      const problem = validityProblem(offline, now());
      if (problem)
        throw new CertificateRefused(`the configured certificate (SETTLE_PAYPAL_CERT_PATH) ${problem}`);
      return offline;
    }
    // Keyed (and fetched) without query or fragment: neither names another certificate, and a
    // query that changed per delivery would make every delivery a fetch.
    const key = `${url.origin}${url.pathname}`;
    let entry = cache.get(key);
    if (!entry || entry.until <= now()) {
      if (entry) cache.delete(key);
      const fetched: CachedCertificate = { result: fetchCertificate(new URL(key)), until: Infinity };
      fetched.result.then(
        (certificate) => {
          fetched.until = Math.min(Date.parse(certificate.validTo), now() + CERT_CACHE_MS);
        },
        () => {
          fetched.until = now() + CERT_FAILURE_CACHE_MS;
        },
      );
      if (cache.size >= CERT_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(key, fetched);
      entry = fetched;
    }
    return entry.result;
  }

  async function fetchCertificate(url: URL): Promise<X509Certificate> {
    const target = options.certOrigin ? new URL(url.pathname, options.certOrigin) : url;
    let text: string;
    try {
      const response = await fetch(target, {
        redirect: 'error',
        signal: AbortSignal.timeout(CERT_FETCH_TIMEOUT_MS),
      });
      if (!response.ok) {
        // Whoever answered (PayPal, or an egress proxy in the way), settle has no certificate to
        // judge the signature by: unavailable, never a forgery.
        await response.body?.cancel();
        throw new CertificateUnavailable(`fetching PAYPAL-CERT-URL answered ${response.status}`);
      }
      text = await readBoundedText(
        response,
        CERT_MAX_BYTES,
        (max) => new CertificateRefused(`PAYPAL-CERT-URL's answer is larger than ${max} bytes`),
      );
    } catch (error) {
      if (error instanceof CertificateRefused || error instanceof CertificateUnavailable) throw error;
      throw new CertificateUnavailable(`PAYPAL-CERT-URL could not be fetched (${errorName(error)})`);
    }
    const chain = certificates(text);
    if (chain.length === 0) throw new CertificateRefused('PAYPAL-CERT-URL holds no PEM certificate');
    const at = now();
    for (const certificate of chain) {
      const problem = validityProblem(certificate, at);
      if (problem) throw new CertificateRefused(`a certificate of PAYPAL-CERT-URL ${problem}`);
    }
    const leaf = chain[0]!;
    if (!isPaypalSubject(leaf.subject)) {
      throw new CertificateRefused("PAYPAL-CERT-URL's certificate is not PayPal's (subject)");
    }
    for (let i = 0; i + 1 < chain.length; i += 1) {
      if (!chain[i]!.checkIssued(chain[i + 1]!) || !chain[i]!.verify(chain[i + 1]!.publicKey)) {
        throw new CertificateRefused("PAYPAL-CERT-URL's chain is broken");
      }
      // An issuer must be a CA (basicConstraints CA:TRUE): a leaf's key signs no certificate.
      if (!chain[i + 1]!.ca) {
        throw new CertificateRefused(`PAYPAL-CERT-URL's certificate ${i + 2} issues another but is not a CA`);
      }
    }
    const last = chain.at(-1)!;
    const trusted = anchors.some(
      (anchor) =>
        anchor.fingerprint256 === last.fingerprint256 ||
        (anchor.ca &&
          last.checkIssued(anchor) &&
          last.verify(anchor.publicKey) &&
          !validityProblem(anchor, at)),
    );
    if (!trusted) throw new CertificateRefused("PAYPAL-CERT-URL's chain ends in no trusted root");
    return leaf;
  }

  return {
    name: 'paypal',
    async verify(request: ProviderRequest): Promise<Verification> {
      if (webhookIds.length === 0) {
        return {
          ok: false,
          kind: 'signature',
          reason:
            'no PayPal webhook ID (SETTLE_PAYPAL_WEBHOOK_ID or SETTLE_PAYPAL_WEBHOOK_IDS) is configured',
        };
      }
      const header = (name: string) => {
        const value = request.headers[name];
        return typeof value === 'string' && value ? value : undefined;
      };
      const transmissionId = header('paypal-transmission-id');
      const transmissionTime = header('paypal-transmission-time');
      const signature = header('paypal-transmission-sig');
      const certUrl = header('paypal-cert-url');
      const algo = header('paypal-auth-algo');
      const missing = [
        ['PAYPAL-TRANSMISSION-ID', transmissionId],
        ['PAYPAL-TRANSMISSION-TIME', transmissionTime],
        ['PAYPAL-TRANSMISSION-SIG', signature],
        ['PAYPAL-CERT-URL', certUrl],
        ['PAYPAL-AUTH-ALGO', algo],
      ].find(([, value]) => value === undefined);
      if (missing) return { ok: false, kind: 'signature', reason: `missing ${missing[0]} header` };
      if (algo !== PAYPAL_AUTH_ALGO) {
        return { ok: false, kind: 'signature', reason: `PAYPAL-AUTH-ALGO must be ${PAYPAL_AUTH_ALGO}` };
      }
      if (transmissionId!.includes('|') || transmissionId!.length > TRANSMISSION_ID_MAX) {
        return {
          ok: false,
          kind: 'signature',
          reason: `PAYPAL-TRANSMISSION-ID must be at most ${TRANSMISSION_ID_MAX} characters, without |`,
        };
      }
      const sentAt = Date.parse(transmissionTime!);
      if (Number.isNaN(sentAt) || transmissionTime!.includes('|')) {
        return { ok: false, kind: 'signature', reason: 'PAYPAL-TRANSMISSION-TIME must be an RFC 3339 time' };
      }
      if (Math.abs(now() - sentAt) > PAYPAL_TOLERANCE_SECONDS * 1000) {
        return {
          ok: false,
          kind: 'signature',
          reason: `transmission time outside the ${PAYPAL_TOLERANCE_SECONDS} s tolerance`,
        };
      }
      const url = paypalCertUrl(certUrl!);
      if (!url) {
        return {
          ok: false,
          kind: 'signature',
          reason: 'PAYPAL-CERT-URL must be https://<host>.paypal.com/v1/notifications/certs/…',
        };
      }
      let certificate: X509Certificate;
      try {
        certificate = await certificateFor(url);
      } catch (error) {
        if (error instanceof CertificateUnavailable) {
          return {
            ok: false,
            kind: 'unavailable',
            reason: error.message,
            retryAfterSeconds: CERT_FAILURE_CACHE_MS / 1000,
          };
        }
        const reason =
          error instanceof CertificateRefused ? error.message : 'the certificate could not be read';
        return { ok: false, kind: 'signature', reason };
      }
      const signatureBytes = Buffer.from(signature!, 'base64');
      const matches = webhookIds.some((webhookId) => {
        const signed = paypalSignedText(transmissionId!, transmissionTime!, webhookId, request.rawBody);
        try {
          return verifySignature('sha256', Buffer.from(signed), certificate.publicKey, signatureBytes);
        } catch {
          return false;
        }
      });
      if (!matches) {
        return {
          ok: false,
          kind: 'signature',
          reason: 'PAYPAL-TRANSMISSION-SIG does not match (webhook ID, time, body and certificate)',
        };
      }
      let event: unknown;
      try {
        event = JSON.parse(request.rawBody);
      } catch {
        return { ok: false, kind: 'malformed', reason: 'body is not valid JSON' };
      }
      return {
        ok: true,
        items: [event],
        mode: paypalMode(event) ?? hostMode(url.hostname),
        transmission: { id: transmissionId!, header: 'paypal-transmission-id' },
      };
    },
    exportItems(line: unknown) {
      return [line];
    },
    exportMode: paypalMode,
    adapt: adaptPaypalEvent,
    ...(options.api ? { confirm: confirmWith(options.api) } : {}),
  };
}

/** What was fetched is no certificate settle trusts for PayPal: the signature is refused (401). */
class CertificateRefused extends Error {}
/** Nothing could be fetched (no answer, a timeout, a non-2xx status): a 503, retried. */
class CertificateUnavailable extends Error {}

/** How long a provider is told to wait when PayPal's API did not answer and named no time. */
const API_RETRY_AFTER_SECONDS = 5;
/** The longest Retry-After passed on from PayPal's API. */
const API_RETRY_AFTER_MAX_SECONDS = 300;

/**
 * Confirms a delivered event with PayPal's API (`GET /v1/notifications/webhooks-events/{id}`): the
 * event PayPal has under that ID, read by the same adapter, must decide the same (kind, type, time,
 * shipment, payment, amount, currency, refund, merchant). No such event, or another, `differs`; the
 * API not answering (5xx, 429, a timeout, refused credentials) is `unavailable`.
 */
function confirmWith(api: PaypalRest) {
  return async (adapted: Extract<AdaptedEvent, { kind: 'payment' | 'unmatched' }>): Promise<Confirmation> => {
    const url = new URL(`/v1/notifications/webhooks-events/${encodeURIComponent(adapted.eventId)}`, api.base);
    let listed: unknown;
    try {
      listed = await api.get(url, { notFound: 'undefined' });
    } catch (error) {
      const fault = error instanceof RecoveryFault ? error : undefined;
      if (fault?.kind === 'refused') {
        return {
          kind: 'differs',
          reason: `PayPal's API refused the lookup (${fault.message})`,
          fields: ['id'],
        };
      }
      const retryAfter = Math.ceil((fault?.retryAfterMs ?? API_RETRY_AFTER_SECONDS * 1000) / 1000);
      return {
        kind: 'unavailable',
        reason: `PayPal's API did not confirm the event: ${fault?.message ?? String(error)}`,
        retryAfterSeconds: Math.min(Math.max(retryAfter, 1), API_RETRY_AFTER_MAX_SECONDS),
      };
    }
    if (listed === undefined) {
      return { kind: 'differs', reason: 'PayPal has no event with this ID', fields: ['id'] };
    }
    const fields = differingFields(adapted, adaptPaypalEvent(listed));
    return fields.length === 0
      ? { kind: 'confirmed' }
      : { kind: 'differs', reason: `PayPal's event differs in ${fields.join(', ')}`, fields };
  };
}

/** The deciding fields in which a delivered event and PayPal's own differ (none: they decide alike). */
function differingFields(delivered: AdaptedEvent, listed: AdaptedEvent): string[] {
  if (listed.kind !== delivered.kind) return ['kind'];
  if (delivered.kind === 'payment' && listed.kind === 'payment') {
    const a = delivered.event as unknown as Record<string, unknown>;
    const b = listed.event as unknown as Record<string, unknown>;
    const top = ['id', 'type', 'created_at'].filter((key) => canonicalJson(a[key]) !== canonicalJson(b[key]));
    const dataA = (a.data ?? {}) as Record<string, unknown>;
    const dataB = (b.data ?? {}) as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(dataA), ...Object.keys(dataB)])].sort();
    const data = keys
      .filter((key) => canonicalJson(dataA[key]) !== canonicalJson(dataB[key]))
      .map((key) => `data.${key}`);
    return [...top, ...data];
  }
  if (delivered.kind === 'unmatched' && listed.kind === 'unmatched') {
    return delivered.providerType === listed.providerType ? [] : ['event_type'];
  }
  return [];
}

/** The text PayPal signs: transmission ID, time, webhook ID and the body's CRC32 (unsigned decimal). */
export function paypalSignedText(
  transmissionId: string,
  time: string,
  webhookId: string,
  rawBody: string,
): string {
  return `${transmissionId}|${time}|${webhookId}|${crc32(Buffer.from(rawBody, 'utf8')) >>> 0}`;
}

/**
 * PAYPAL-CERT-URL when it is PayPal's: https, default port, no credentials, a paypal.com host
 * (api.paypal.com, api.sandbox.paypal.com, …), the certs path. Else undefined: nothing is fetched.
 */
export function paypalCertUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' || url.port !== '' || url.username || url.password) return undefined;
  if (!/^(?:[a-z0-9-]+\.)+paypal\.com$/.test(url.hostname)) return undefined;
  if (!url.pathname.startsWith('/v1/notifications/certs/')) return undefined;
  return url;
}

/** The environment of a PayPal host: a sandbox host is test mode, another paypal.com host live. */
function hostMode(hostname: string): ProviderMode | undefined {
  if (/(^|\.)sandbox\.paypal\.com$/.test(hostname)) return 'test';
  if (/(^|\.)paypal\.com$/.test(hostname)) return 'live';
  return undefined;
}

/**
 * The mode of a PayPal event: the host of its own links (`api.sandbox.paypal.com` in sandbox,
 * `api.paypal.com` live), part of the signed body (and of what the API lists). None: undefined
 * (the webhook then takes the certificate URL's host).
 */
function paypalMode(event: unknown): ProviderMode | undefined {
  const links = field(event, 'links');
  if (!Array.isArray(links)) return undefined;
  for (const link of links) {
    const href = nonEmptyString(field(link, 'href'));
    if (!href) continue;
    try {
      const mode = hostMode(new URL(href).hostname);
      if (mode) return mode;
    } catch {
      // not a URL: read no mode from it
    }
  }
  return undefined;
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (
      /^https?:$/.test(url.protocol) &&
      (url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost')
    );
  } catch {
    return false;
  }
}

function isPaypalSubject(subject: string): boolean {
  const parts = subject.split('\n');
  const cn = parts.find((part) => part.startsWith('CN='))?.slice(3) ?? '';
  const o = parts.find((part) => part.startsWith('O='))?.slice(2) ?? '';
  return /^(?:[a-z0-9-]+\.)*paypal\.com$/i.test(cn) && /^PayPal\b/i.test(o);
}

function validityProblem(certificate: X509Certificate, at: number): string | undefined {
  if (Date.parse(certificate.validFrom) > at) return 'is not valid yet';
  if (Date.parse(certificate.validTo) < at) return 'has expired';
  return undefined;
}

function certificates(text: string): X509Certificate[] {
  const pems = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const chain: X509Certificate[] = [];
  for (const pem of pems) {
    try {
      chain.push(new X509Certificate(pem));
    } catch {
      throw new CertificateRefused('PAYPAL-CERT-URL holds a certificate that cannot be read');
    }
  }
  return chain;
}

function firstCertificate(pem: string): X509Certificate {
  const [first] = certificates(pem);
  if (!first) throw new Error('SETTLE_PAYPAL_CERT_PATH holds no PEM certificate');
  return first;
}

function errorName(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause?.code;
  if (cause) return cause;
  return error instanceof Error ? error.name : 'error';
}

/** The capture a refund or reversal belongs to: its `up` link (`…/v2/payments/captures/<id>`). */
function captureOf(resource: unknown): string | undefined {
  const links = field(resource, 'links');
  if (!Array.isArray(links)) return undefined;
  for (const link of links) {
    if (field(link, 'rel') !== 'up') continue;
    const match = /\/captures\/([^/?#]+)/.exec(String(field(link, 'href') ?? ''));
    if (match) return match[1];
  }
  return undefined;
}

/**
 * One PayPal webhook event (as sent, or as `GET /v1/notifications/webhooks-events` lists it) as
 * settle sees it. The shipment is the resource's `custom_id` (the purchase unit's, which PayPal
 * copies to its captures and their refunds), a dispute's the disputed transaction's `custom`.
 */
export function adaptPaypalEvent(item: unknown): AdaptedEvent {
  const id = field(item, 'id');
  if (!isEventId(id)) {
    return { kind: 'invalid', eventId: null, path: 'id', message: 'must be a PayPal event ID (WH-…)' };
  }
  const type = nonEmptyString(field(item, 'event_type'));
  if (!type)
    return { kind: 'invalid', eventId: id, path: 'event_type', message: 'must be a PayPal event type' };
  const ignoredBecause = PAYPAL_IGNORED_TYPES[type];
  if (ignoredBecause)
    return { kind: 'ignored', eventId: id, providerType: type, reason: ignoredBecause(item) };
  const target = PAYPAL_EVENT_TYPES[type];
  if (!target)
    return { kind: 'ignored', eventId: id, providerType: type, reason: 'not a type settle acts on' };

  const resource = field(item, 'resource');
  let shipmentId: string | undefined;
  let paymentId: string | undefined;
  let amount: unknown;
  let refundId: string | undefined;
  let merchantId: string | undefined;
  let amountPath = 'resource.amount';
  if (type === 'CUSTOMER.DISPUTE.CREATED') {
    const transactions = field(resource, 'disputed_transactions');
    const first: unknown = Array.isArray(transactions) ? transactions[0] : undefined;
    shipmentId = nonEmptyString(field(first, 'custom'));
    paymentId = nonEmptyString(field(first, 'seller_transaction_id'));
    merchantId = nonEmptyString(field(first, 'seller', 'merchant_id'));
    amount = field(resource, 'dispute_amount');
    amountPath = 'resource.dispute_amount';
    if (shipmentId && !paymentId) {
      return invalid(id, 'resource.disputed_transactions.0.seller_transaction_id', 'must name the capture');
    }
  } else {
    shipmentId = nonEmptyString(field(resource, 'custom_id'));
    amount = field(resource, 'amount');
    if (target !== 'payment.refunded') {
      // A capture, completed or denied: the merchant is its payee.
      paymentId = nonEmptyString(field(resource, 'id'));
      merchantId = nonEmptyString(field(resource, 'payee', 'merchant_id'));
    } else {
      // A refund or reversal: the merchant is the refund's payer.
      merchantId = nonEmptyString(field(resource, 'payer', 'merchant_id'));
      refundId = nonEmptyString(field(resource, 'id'));
      paymentId = captureOf(resource);
      if (shipmentId && !paymentId) {
        return invalid(id, 'resource.links', 'must have the `up` link to the capture refunded');
      }
    }
  }
  if (!shipmentId) {
    return {
      kind: 'unmatched',
      eventId: id,
      providerType: type,
      reason:
        type === 'CUSTOMER.DISPUTE.CREATED'
          ? `PayPal ${type} names no shipment: its disputed transaction has no custom`
          : `PayPal ${type} names no shipment: its resource has no custom_id`,
      payload: item,
    };
  }
  const currency = field(amount, 'currency_code');
  if (!isIsoCurrency(currency)) return invalid(id, `${amountPath}.currency_code`, NOT_ISO_CURRENCY);
  // PayPal states major units with their decimal point (`"100"` TWD, `"10.99"` USD): the text itself
  // says its scale, so PayPal's no-decimal currencies (HUF, JPY, TWD) need no table to read it.
  const stated = readDecimalText(field(amount, 'value'));
  if (stated === undefined) {
    return invalid(id, `${amountPath}.value`, 'must be a decimal amount such as "10.99", at most 15 digits');
  }
  const event = {
    id,
    type: target,
    created_at: field(item, 'create_time'),
    data: {
      shipment_id: shipmentId,
      payment_id: paymentId,
      ...fromProviderUnits(stated.value, stated.decimals, currency),
      currency,
      ...(refundId ? { refund_id: `paypal:${refundId}` } : {}),
      provider: 'paypal',
      ...(merchantId ? { provider_account: merchantId } : {}),
      provider_type: type,
    },
  };
  return adaptedPaymentEvent(id, type, event, (path) =>
    path === 'created_at' ? 'create_time' : path === 'data.payment_id' ? 'resource.id' : path,
  );
}

function invalid(eventId: string | null, path: string, message: string): AdaptedEvent {
  return { kind: 'invalid', eventId, path, message };
}
