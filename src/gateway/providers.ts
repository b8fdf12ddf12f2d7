import type { Unmatched } from '../domain/api-contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admitProviderBatch, admitProviderEvent, type ProviderOutcome } from '../app/admit-provider-event';
import { describeIssues } from '../domain/payment-event';
import { parseUntrustedJson } from '../domain/untrusted-json';
import { ErrorCode } from '../domain/errors';
import { ADYEN_ACCEPTED, createAdyenAdapter } from '../providers/adyen';
import { createPaypalAdapter } from '../providers/paypal';
import { createStripeAdapter } from '../providers/stripe';
import {
  inMode,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from '../providers/types';
import { readFileSync } from 'node:fs';
import { ConfigError, type Config } from '../config';
import { shortHash } from '../lib/hash';
import type { Logger } from '../lib/logger';
import { answerAdmission, refuseOtherMethods, refuseUnavailable, reject } from './replies';
import type { Services } from '../app/services';

/** What the provider routes take from the configuration. */
export type ProviderRouteOptions = {
  /** SETTLE_STRIPE_WEBHOOK_SECRETS; none configured: every Stripe request is refused (401). */
  stripeWebhookSecrets?: string[];
  /** SETTLE_ADYEN_HMAC_KEYS (hex); none configured: every Adyen request is refused (401). */
  adyenHmacKeys?: string[];
  /**
   * SETTLE_ADYEN_BASIC_AUTH as user:password; unset: no basic auth is asked (the configuration
   * refuses HMAC keys without it unless SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH is true).
   */
  adyenBasicAuth?: string;
  /** SETTLE_PAYPAL_WEBHOOK_ID; unset: every PayPal request is refused (401). */
  paypalWebhookId?: string;
  /** SETTLE_PAYPAL_CERT_PATH's PEM: PayPal's signatures are verified with it, nothing is fetched. */
  paypalCertificatePem?: string;
  /** Tests only: where PayPal certificate URLs are fetched from (a loopback stand-in; src/providers/paypal.ts). */
  paypalCertOrigin?: string;
  /** Tests only: the roots a fetched PayPal chain must end in (default: Node's bundled ones). */
  paypalTrustedCas?: string[];
  /** SETTLE_PROVIDER_MODE; unset: events of either mode are taken. */
  providerMode?: ProviderMode;
};

export type ProviderRouteDeps = Services & ProviderRouteOptions & { logger?: Logger };

/**
 * The provider routes' part of the configuration. The gateway hands its whole dependencies to
 * registerProviderRoutes, so a caller spreads this into them and every option arrives.
 */
export function providerRouteOptions(
  config: Pick<Config, 'stripeWebhookSecrets' | 'adyenHmacKeys' | 'adyenBasicAuth' | 'providerMode'> &
    Partial<Pick<Config, 'paypalWebhookId' | 'paypalCertPath'>>,
): ProviderRouteOptions {
  return {
    stripeWebhookSecrets: config.stripeWebhookSecrets,
    adyenHmacKeys: config.adyenHmacKeys,
    adyenBasicAuth: config.adyenBasicAuth,
    paypalWebhookId: config.paypalWebhookId,
    // Read once at start: a path that cannot be read stops the gateway, naming the variable.
    paypalCertificatePem: config.paypalCertPath ? readPaypalCertificate(config.paypalCertPath) : undefined,
    providerMode: config.providerMode,
  };
}

function readPaypalCertificate(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError([
      { variable: 'SETTLE_PAYPAL_CERT_PATH', message: `cannot be read: ${code} (${path})` },
    ]);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigError([
      { variable: 'SETTLE_PAYPAL_CERT_PATH', message: `holds no PEM certificate (${path})` },
    ]);
  }
  return text;
}

/**
 * `POST /webhooks/stripe`, `POST /webhooks/adyen` and `POST /webhooks/paypal`: the provider's adapter verifies and translates,
 * then every payment event takes the path of `/webhooks/payments` (src/app/admit-payment-event.ts). Under
 * SETTLE_PROVIDER_MODE, a verified event of the other mode is acknowledged as ignored and writes
 * nothing.
 */
export function registerProviderRoutes(app: FastifyInstance, deps: ProviderRouteDeps) {
  const stripe = createStripeAdapter({ secrets: deps.stripeWebhookSecrets ?? [] });
  const adyen = createAdyenAdapter({ hmacKeys: deps.adyenHmacKeys ?? [], basicAuth: deps.adyenBasicAuth });
  const takenInMode = (provider: string, adapted: AdaptedEvent, stated: ProviderMode | undefined) => {
    const taken = inMode(adapted, deps.providerMode, stated);
    if (taken !== adapted && taken.kind === 'ignored') {
      deps.logger?.warn(
        { provider, event: shortHash(taken.eventId), mode: stated, providerMode: deps.providerMode },
        `${provider} event ignored: ${taken.reason}`,
      );
    }
    return taken;
  };

  /** A provider that posts one event per request (Stripe, PayPal): verify, hold to the edge rule, admit. */
  const singleEventRoute = (provider: 'stripe' | 'paypal', label: string, adapter: ProviderAdapter) => {
    const path = `/webhooks/${provider}`;
    app.post(path, async (request, reply) => {
      const verified = await adapter.verify(providerRequest(request));
      if (!verified.ok) return refuseVerification(reply, label, verified);
      // Signed, then held to the edge rule before anything is admitted (the order of /webhooks/payments).
      const unreadable = refuseUnreadableBody(request, reply);
      if (unreadable) return unreadable;
      const adapted = takenInMode(label, adapter.adapt(verified.items[0]), verified.mode);
      if (adapted.kind !== 'invalid') request.eventId = adapted.eventId;
      const outcome = await admitProviderEvent(deps, provider, adapted);
      request.ingestOutcome = outcome.status;
      return answerOne(reply, outcome, adapted);
    });
    refuseOtherMethods(app, path, ['POST']);
  };

  singleEventRoute('stripe', 'Stripe', stripe);

  app.post('/webhooks/adyen', async (request, reply) => {
    const verified = await adyen.verify(providerRequest(request));
    if (!verified.ok) return refuseVerification(reply, 'Adyen', verified);
    // Signed, then held to the edge rule before anything is admitted (the order of /webhooks/payments).
    const unreadable = refuseUnreadableBody(request, reply);
    if (unreadable) return unreadable;
    // Translate the whole batch first: an item settle cannot read refuses the batch before any admission.
    // The batch's `live` is the mode of every item in it.
    const batch = verified.items.map((item) => takenInMode('Adyen', adyen.adapt(item), verified.mode));
    const bad = batch.findIndex((item) => item.kind === 'invalid');
    if (bad >= 0) {
      const item = batch[bad] as Extract<AdaptedEvent, { kind: 'invalid' }>;
      const path = `notificationItems.${bad}.NotificationRequestItem.${item.path}`;
      return reject(reply, 400, ErrorCode.InvalidEvent, `${path}: ${item.message}`, {
        issues: [{ path, message: item.message }],
      });
    }
    // `[accepted]` only once every item is durably admitted (src/app/admit-provider-event.ts).
    const admitted = await admitProviderBatch(deps, 'adyen', batch);
    if (admitted.status === 'unavailable') {
      request.ingestOutcome = 'unavailable';
      return refuseUnavailable(reply, admitted.dependency);
    }
    request.ingestOutcome = Object.entries(admitted.counts)
      .map(([status, n]) => `${status}:${n}`)
      .join(',');
    return reply.code(200).type('text/plain; charset=utf-8').send(ADYEN_ACCEPTED);
  });
  refuseOtherMethods(app, '/webhooks/adyen', ['POST']);

  const paypal = createPaypalAdapter({
    webhookId: deps.paypalWebhookId,
    certificatePem: deps.paypalCertificatePem,
    certOrigin: deps.paypalCertOrigin,
    trustedCas: deps.paypalTrustedCas,
  });
  singleEventRoute('paypal', 'PayPal', paypal);
}

/**
 * The edge rule every route applies (docs/limits.md): a body with text PostgreSQL cannot store or
 * nested deeper than MAX_JSON_DEPTH is a 400 naming the field, before any of it is admitted.
 */
function refuseUnreadableBody(request: FastifyRequest, reply: FastifyReply) {
  const parsed = parseUntrustedJson(providerRequest(request).rawBody);
  if (parsed.ok) return undefined;
  return reject(reply, 400, ErrorCode.InvalidEvent, describeIssues([parsed.issue]), {
    issues: [parsed.issue],
  });
}

function providerRequest(request: FastifyRequest): ProviderRequest {
  return {
    rawBody: (request.body as Buffer | undefined)?.toString('utf8') ?? '',
    headers: request.headers,
  };
}

function refuseVerification(
  reply: FastifyReply,
  provider: string,
  verified: Extract<Verification, { ok: false }>,
) {
  switch (verified.kind) {
    case 'unauthorized':
      reply.header('www-authenticate', 'Basic realm="settle"');
      return reject(reply, 401, ErrorCode.Unauthorized, `${provider} webhook refused: ${verified.reason}`);
    case 'signature':
      return reject(
        reply,
        401,
        ErrorCode.InvalidSignature,
        `${provider} webhook signature refused: ${verified.reason}`,
      );
    case 'malformed':
      return reject(reply, 400, ErrorCode.InvalidEvent, verified.reason);
  }
}

/** The answers of `/webhooks/payments`, plus `ignored` and `unmatched` (both 200: nothing to retry). */
function answerOne(reply: FastifyReply, outcome: ProviderOutcome, adapted: AdaptedEvent) {
  if (outcome.status !== 'unmatched') return answerAdmission(reply, outcome);
  return reply.code(200).send({
    status: 'unmatched',
    event_id: outcome.eventId,
    message: adapted.kind === 'unmatched' ? adapted.reason : 'names no shipment',
  } satisfies Unmatched);
}
