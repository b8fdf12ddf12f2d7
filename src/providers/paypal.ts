import { X509Certificate, verify as verifySignature } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { crc32 } from 'node:zlib';
import { isEventId } from '../domain/ids';
import { fromProviderUnits, isIsoCurrency, NOT_ISO_CURRENCY, readDecimalText } from '../domain/money';
import type { PaymentEventType } from '../domain/payment-event';
import { readBoundedText } from '../lib/bounded-text';
import {
  adaptedPaymentEvent,
  field,
  nonEmptyString,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from './types';

/** The same replay window as Stripe's: a transmission more than five minutes from now is refused. */
export const PAYPAL_TOLERANCE_SECONDS = 300;

/** The one algorithm PayPal signs webhooks with (`PAYPAL-AUTH-ALGO`). */
const PAYPAL_AUTH_ALGO = 'SHA256withRSA';

/** A fetched certificate chain larger than this is refused (PayPal's is about 4 KiB). */
const CERT_MAX_BYTES = 64 * 1024;
/** One certificate fetch's limit; the delivery is refused (PayPal retries it) after it. */
const CERT_FETCH_TIMEOUT_MS = 5_000;
/** Certificates kept (each until it expires or a day has passed, whichever is first). */
const CERT_CACHE_ENTRIES = 16;
const CERT_CACHE_MS = 24 * 3_600_000;

/**
 * The PayPal event types settle acts on; subscribe the webhook to exactly these. A reversal (PayPal
 * took the money back, e.g. a chargeback decided for the buyer) is a refund of the capture; a dispute
 * opened fails a payment not yet captured and, as status never moves backwards, changes nothing on a
 * captured one (the money moves only with PAYMENT.CAPTURE.REVERSED or a refund).
 */
const PAYPAL_EVENT_TYPES: Record<string, PaymentEventType> = {
  'PAYMENT.CAPTURE.COMPLETED': 'payment.captured',
  'PAYMENT.CAPTURE.REFUNDED': 'payment.refunded',
  'PAYMENT.CAPTURE.REVERSED': 'payment.refunded',
  'CUSTOMER.DISPUTE.CREATED': 'payment.failed',
};

/** The types the recovery sweep keeps from PayPal's list (src/providers/paypal-recovery.ts). */
export const PAYPAL_ACTED_ON_TYPES: readonly string[] = Object.keys(PAYPAL_EVENT_TYPES);

export type PaypalAdapterOptions = {
  /** SETTLE_PAYPAL_WEBHOOK_ID: unset, every request is refused. */
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
  now?: () => number;
};

type CachedKey = { certificate: X509Certificate; until: number };

/**
 * PayPal: one event per request, signed with RSA-SHA256 over
 * `<PAYPAL-TRANSMISSION-ID>|<PAYPAL-TRANSMISSION-TIME>|<webhook ID>|<CRC32 of the body, unsigned decimal>`
 * with the certificate at `PAYPAL-CERT-URL` (an https URL on a paypal.com host, fetched with a time
 * and size bound, its chain checked against trusted roots, cached) or, offline, the configured one.
 * The key is PayPal's event ID (`WH-…`). The body is covered through its CRC32 only, which is no
 * cryptographic hash: docs/providers.md says what that leaves open.
 */
export function createPaypalAdapter(options: PaypalAdapterOptions): ProviderAdapter {
  const now = options.now ?? Date.now;
  const cache = new Map<string, Promise<CachedKey>>();
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
    const key = url.href;
    const cached = cache.get(key);
    if (cached) {
      const entry = await cached.catch(() => undefined);
      if (entry && entry.until > now()) return entry.certificate;
      if (cache.get(key) === cached) cache.delete(key);
    }
    const pending = fetchCertificate(url).then((certificate) => ({
      certificate,
      until: Math.min(Date.parse(certificate.validTo), now() + CERT_CACHE_MS),
    }));
    // A failed fetch is not kept: the next delivery (PayPal's retry) fetches again.
    pending.catch(() => cache.get(key) === pending && cache.delete(key));
    if (cache.size >= CERT_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(key, pending);
    return (await pending).certificate;
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
        await response.body?.cancel();
        throw new CertificateRefused(`fetching PAYPAL-CERT-URL answered ${response.status}`);
      }
      text = await readBoundedText(
        response,
        CERT_MAX_BYTES,
        (max) => new CertificateRefused(`PAYPAL-CERT-URL's answer is larger than ${max} bytes`),
      );
    } catch (error) {
      if (error instanceof CertificateRefused) throw error;
      throw new CertificateRefused(`PAYPAL-CERT-URL could not be fetched (${errorName(error)})`);
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
    }
    const last = chain.at(-1)!;
    const trusted = anchors.some(
      (anchor) =>
        anchor.fingerprint256 === last.fingerprint256 ||
        (last.checkIssued(anchor) && last.verify(anchor.publicKey) && !validityProblem(anchor, at)),
    );
    if (!trusted) throw new CertificateRefused("PAYPAL-CERT-URL's chain ends in no trusted root");
    return leaf;
  }

  return {
    name: 'paypal',
    async verify(request: ProviderRequest): Promise<Verification> {
      if (!options.webhookId) {
        return {
          ok: false,
          kind: 'signature',
          reason: 'no PayPal webhook ID (SETTLE_PAYPAL_WEBHOOK_ID) is configured',
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
      if (transmissionId!.includes('|')) {
        return { ok: false, kind: 'signature', reason: 'PAYPAL-TRANSMISSION-ID must not contain |' };
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
        const reason =
          error instanceof CertificateRefused ? error.message : 'the certificate could not be read';
        return { ok: false, kind: 'signature', reason };
      }
      const signed = paypalSignedText(transmissionId!, transmissionTime!, options.webhookId, request.rawBody);
      let matches: boolean;
      try {
        matches = verifySignature(
          'sha256',
          Buffer.from(signed),
          certificate.publicKey,
          Buffer.from(signature!, 'base64'),
        );
      } catch {
        matches = false;
      }
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
      return { ok: true, items: [event], mode: paypalMode(event) ?? hostMode(url.hostname) };
    },
    exportItems(line: unknown) {
      return [line];
    },
    exportMode: paypalMode,
    adapt: adaptPaypalEvent,
  };
}

class CertificateRefused extends Error {}

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
  const target = PAYPAL_EVENT_TYPES[type];
  if (!target)
    return { kind: 'ignored', eventId: id, providerType: type, reason: 'not a type settle acts on' };

  const resource = field(item, 'resource');
  let shipmentId: string | undefined;
  let paymentId: string | undefined;
  let amount: unknown;
  let refundId: string | undefined;
  let amountPath = 'resource.amount';
  if (type === 'CUSTOMER.DISPUTE.CREATED') {
    const transactions = field(resource, 'disputed_transactions');
    const first: unknown = Array.isArray(transactions) ? transactions[0] : undefined;
    shipmentId = nonEmptyString(field(first, 'custom'));
    paymentId = nonEmptyString(field(first, 'seller_transaction_id'));
    amount = field(resource, 'dispute_amount');
    amountPath = 'resource.dispute_amount';
    if (shipmentId && !paymentId) {
      return invalid(id, 'resource.disputed_transactions.0.seller_transaction_id', 'must name the capture');
    }
  } else {
    shipmentId = nonEmptyString(field(resource, 'custom_id'));
    amount = field(resource, 'amount');
    if (type === 'PAYMENT.CAPTURE.COMPLETED') {
      paymentId = nonEmptyString(field(resource, 'id'));
    } else {
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
