import 'reflect-metadata';
import { randomBytes, randomUUID, sign, webcrypto } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as x509 from '@peculiar/x509';
import { paypalSignedText } from '../src/providers/paypal/adapter';
import { listenLocally } from './local-server';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

/** What the next request to the events API gets instead of its page. */
export type PaypalFault =
  | { status: 429; retryAfter?: string }
  | { status: 500 | 502 | 503; retryAfter?: string }
  | { status: 401 }
  /** Never answers (until the server closes). */
  | { hang: true };

export type PaypalRequest = { at: number; method: string; path: string; query: URLSearchParams };

type Pem = { cert: string; key: string };

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

async function authority(name: string, notAfter: Date, options: { ca?: boolean } = {}) {
  const keys = await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name,
    notBefore: new Date(Date.now() - 3_600_000),
    notAfter,
    keys,
    signingAlgorithm: RSA,
    extensions: [
      new x509.BasicConstraintsExtension(options.ca ?? true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  return { cert, keys };
}

/** A certificate with keyCertSign but basicConstraints CA:FALSE, issued by `ca`: it may not issue. */
async function notAuthorityOf(ca: Awaited<ReturnType<typeof authority>>, notAfter: Date) {
  const keys = await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8).toString('hex'),
    subject: 'CN=settle test intermediate that is no CA, O=DigiCert test',
    issuer: ca.cert.subject,
    notBefore: new Date(Date.now() - 3_600_000),
    notAfter,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: RSA,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  return { cert, keys };
}

async function leafOf(
  ca: Awaited<ReturnType<typeof authority>>,
  subject: string,
  validity: { notBefore: Date; notAfter: Date },
): Promise<Pem> {
  const keys = await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8).toString('hex'),
    subject,
    issuer: ca.cert.subject,
    ...validity,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: RSA,
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
}

/** PayPal's webhook-signing certificates, made for one test run. */
export async function createPaypalCertificates() {
  const day = 86_400_000;
  const ca = await authority('CN=settle test PayPal root, O=DigiCert test', new Date(Date.now() + day));
  const rogue = await authority('CN=someone else, O=Mallory', new Date(Date.now() + day));
  const valid = { notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + day) };
  const subject = 'CN=messageverificationcerts.paypal.com, O=PayPal';
  const notCa = await notAuthorityOf(ca, new Date(Date.now() + day));
  const underNotCa = await leafOf(notCa, subject, valid);
  return {
    /** The root a fetched chain must end in (pass as `trustedCas`). */
    ca: ca.cert.toString('pem'),
    /** PayPal's signing certificate, issued by `ca`. */
    paypal: await leafOf(ca, subject, valid),
    /** PayPal's subject, issued by a CA nobody trusts. */
    forged: await leafOf(rogue, subject, valid),
    /** Issued by `ca`, but to someone else. */
    stranger: await leafOf(ca, 'CN=www.example.com, O=Example', valid),
    /**
     * PayPal's subject, issued by a certificate that `ca` issued without CA:TRUE; `cert` is the chain
     * (leaf, then that issuer), as a certificate URL serves it.
     */
    notCa: { cert: `${underNotCa.cert}${notCa.cert.toString('pem')}\n`, key: underNotCa.key },
    /** Issued by `ca` to PayPal, expired an hour ago. */
    expired: await leafOf(ca, subject, {
      notBefore: new Date(Date.now() - 2 * day),
      notAfter: new Date(Date.now() - 3_600_000),
    }),
  };
}

export type PaypalCertificates = Awaited<ReturnType<typeof createPaypalCertificates>>;

/**
 * Signs a body as PayPal does: RSA-SHA256 over `<transmission id>|<time>|<webhook id>|<crc32>`,
 * with the headers PayPal sends. `certUrl` is the URL named in PAYPAL-CERT-URL.
 */
export function signPaypal(
  body: string,
  options: { webhookId: string; key: string; certUrl?: string; time?: Date; transmissionId?: string },
): Record<string, string> {
  const transmissionId = options.transmissionId ?? randomUUID();
  const time = (options.time ?? new Date()).toISOString();
  const signature = sign(
    'sha256',
    Buffer.from(paypalSignedText(transmissionId, time, options.webhookId, body)),
    options.key,
  ).toString('base64');
  return {
    'content-type': 'application/json',
    'paypal-transmission-id': transmissionId,
    'paypal-transmission-time': time,
    'paypal-transmission-sig': signature,
    'paypal-cert-url':
      options.certUrl ?? 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-good',
    'paypal-auth-algo': 'SHA256withRSA',
  };
}

/** A PayPal webhook event as PayPal sends (and lists) it. */
export function paypalEvent(
  type: string,
  resource: Record<string, unknown>,
  options: { id?: string; createTime?: Date; sandbox?: boolean } = {},
): Record<string, unknown> {
  const id =
    options.id ??
    `WH-${randomBytes(8).toString('hex').toUpperCase()}-${randomBytes(8).toString('hex').toUpperCase()}`;
  const host = options.sandbox === false ? 'api.paypal.com' : 'api.sandbox.paypal.com';
  return {
    id,
    event_version: '1.0',
    create_time: (options.createTime ?? new Date()).toISOString(),
    resource_type: type.startsWith('CUSTOMER.DISPUTE')
      ? 'dispute'
      : type.endsWith('COMPLETED')
        ? 'capture'
        : 'refund',
    resource_version: '2.0',
    event_type: type,
    summary: `${type} (test)`,
    resource,
    links: [
      { href: `https://${host}/v1/notifications/webhooks-events/${id}`, rel: 'self', method: 'GET' },
      {
        href: `https://${host}/v1/notifications/webhooks-events/${id}/resend`,
        rel: 'resend',
        method: 'POST',
      },
    ],
  };
}

/** A completed capture of `value` (e.g. "42.00") for a shipment (its purchase unit's custom_id). */
export function paypalCapture(shipmentId: string | undefined, value = '42.00', currency = 'EUR') {
  return {
    id: `CAP${randomBytes(6).toString('hex').toUpperCase()}`,
    status: 'COMPLETED',
    amount: { currency_code: currency, value },
    final_capture: true,
    ...(shipmentId === undefined ? {} : { custom_id: shipmentId }),
    create_time: new Date().toISOString(),
  };
}

/** A refund of a capture (its `up` link names the capture). */
export function paypalRefund(captureId: string, shipmentId: string, value = '42.00', currency = 'EUR') {
  return {
    id: `REF${randomBytes(6).toString('hex').toUpperCase()}`,
    status: 'COMPLETED',
    amount: { currency_code: currency, value },
    custom_id: shipmentId,
    links: [
      { href: `https://api.paypal.com/v2/payments/refunds/x`, rel: 'self', method: 'GET' },
      { href: `https://api.paypal.com/v2/payments/captures/${captureId}`, rel: 'up', method: 'GET' },
    ],
  };
}

/**
 * A local PayPal REST API: `POST /v1/oauth2/token` (client credentials, basic auth),
 * `GET /v1/notifications/webhooks-events` (start_time inclusive, end_time exclusive, page_size 1–300,
 * newest first, the next page by a `links` rel=next whose href names PayPal's own host, as PayPal's
 * do), `GET /v1/notifications/webhooks-events/<id>` (one event, or 404), and the signing
 * certificates at `/v1/notifications/certs/<name>`: `CERT-…-good` (PayPal's), `…-forged`,
 * `…-stranger`, `…-expired`, `…-notCa` (issued by a certificate without CA:TRUE), `…-huge` (over a
 * megabyte), `…-hang` (never answers), `…-unavailable` (503). Faults queued with `failNext` answer
 * the next events-API requests (a listing or one event) instead. Every request is logged.
 */
export async function startPaypalApi(options: { certificates: PaypalCertificates }) {
  const clientId = `AZ${randomBytes(16).toString('hex')}`;
  const clientSecret = `EL${randomBytes(24).toString('hex')}`;
  const events: { event: Record<string, unknown>; seq: number }[] = [];
  const faults: PaypalFault[] = [];
  const requests: PaypalRequest[] = [];
  const tokens = new Set<string>();
  let seq = 0;
  const certs = options.certificates;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'paypal-debug-id': `dbg${seq}`, ...headers });
    res.end(JSON.stringify(body));
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push({
      at: Date.now(),
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
    });
    req.resume();
    const cert =
      /^\/v1\/notifications\/certs\/CERT-[A-Za-z0-9-]*-(good|forged|stranger|expired|notCa|huge|hang|unavailable)$/.exec(
        url.pathname,
      );
    if (cert) {
      const kind = cert[1] as
        'good' | 'forged' | 'stranger' | 'expired' | 'notCa' | 'huge' | 'hang' | 'unavailable';
      if (kind === 'hang') return;
      if (kind === 'unavailable')
        return send(res, 503, { name: 'SERVICE_UNAVAILABLE', message: 'try later' });
      const pem =
        kind === 'huge'
          ? `${certs.paypal.cert}${'#'.repeat(1024 * 1024)}`
          : (kind === 'good' ? certs.paypal : certs[kind]).cert;
      res.writeHead(200, { 'content-type': 'application/x-pem-file' });
      return res.end(pem);
    }
    if (req.method === 'POST' && url.pathname === '/v1/oauth2/token') {
      const expected = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
      if (req.headers.authorization !== expected) {
        return send(res, 401, { error: 'invalid_client', error_description: 'Client Authentication failed' });
      }
      const token = `A21AA${randomBytes(16).toString('hex')}`;
      tokens.add(token);
      return send(res, 200, {
        scope: 'https://uri.paypal.com/services/webhooks',
        access_token: token,
        token_type: 'Bearer',
        expires_in: 32_400,
      });
    }
    const byId = /^\/v1\/notifications\/webhooks-events\/([^/]+)$/.exec(url.pathname);
    if ((url.pathname !== '/v1/notifications/webhooks-events' && !byId) || req.method !== 'GET') {
      return send(res, 404, {
        name: 'RESOURCE_NOT_FOUND',
        message: 'The specified resource does not exist.',
      });
    }
    const fault = faults.shift();
    if (fault) {
      if ('hang' in fault) return;
      const headers: Record<string, string> =
        'retryAfter' in fault && fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      if (fault.status === 429)
        return send(res, 429, { name: 'RATE_LIMIT_REACHED', message: 'Too many requests' }, headers);
      if (fault.status === 401)
        return send(res, 401, { name: 'AUTHENTICATION_FAILURE', message: 'Authentication failed' });
      return send(
        res,
        fault.status,
        { name: 'INTERNAL_SERVICE_ERROR', message: 'An internal service error occurred.' },
        headers,
      );
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !tokens.has(bearer)) {
      return send(res, 401, {
        name: 'AUTHENTICATION_FAILURE',
        message: 'Authentication failed due to invalid authentication credentials',
      });
    }
    if (byId) {
      const id = decodeURIComponent(byId[1]!);
      const found = events.find((stored) => stored.event.id === id);
      if (!found) {
        return send(res, 404, {
          name: 'INVALID_RESOURCE_ID',
          message: 'The requested resource ID was not found',
        });
      }
      return send(res, 200, found.event);
    }
    const q = url.searchParams;
    const pageSize = q.has('page_size') ? Number(q.get('page_size')) : 10;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 300) {
      return send(res, 400, { name: 'INVALID_REQUEST', message: 'page_size must be 1 to 300' });
    }
    const page = q.has('page') ? Number(q.get('page')) : 1;
    const from = q.has('start_time') ? Date.parse(q.get('start_time')!) : -Infinity;
    const to = q.has('end_time') ? Date.parse(q.get('end_time')!) : Infinity;
    const matching = events
      .filter((s) => {
        const at = Date.parse(String(s.event.create_time));
        return at >= from && at < to;
      })
      .sort(
        (a, b) =>
          Date.parse(String(b.event.create_time)) - Date.parse(String(a.event.create_time)) || b.seq - a.seq,
      );
    const slice = matching.slice((page - 1) * pageSize, page * pageSize);
    const links: { href: string; rel: string; method: string }[] = [];
    if (matching.length > page * pageSize) {
      const next = new URLSearchParams(q);
      next.set('page', String(page + 1));
      links.push({
        href: `https://api-m.paypal.com/v1/notifications/webhooks-events?${next}`,
        rel: 'next',
        method: 'GET',
      });
    }
    send(res, 200, { events: slice.map((s) => s.event), count: slice.length, links });
  };

  const server = await listenLocally(handle);

  return {
    clientId,
    clientSecret,
    url: server.url,
    requests,
    /** Adds an event as PayPal would list it. */
    add(event: Record<string, unknown>) {
      seq += 1;
      events.push({ event, seq });
    },
    failNext(...next: PaypalFault[]) {
      faults.push(...next);
    },
    /** Forgets every token issued: the next request with one is a 401. */
    expireTokens() {
      tokens.clear();
    },
    close: () => server.close(),
  };
}

export type PaypalApi = Awaited<ReturnType<typeof startPaypalApi>>;
