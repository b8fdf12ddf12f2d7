import type { Unmatched } from '../domain/api-contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  admitProviderBatch,
  admitProviderEvent,
  takeProviderTransmission,
  type ProviderOutcome,
} from '../app/admit-provider-event';
import { providerDeliveriesRefusedTotal } from '../metrics/settle-metrics';
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
  type ProviderName,
  type ProviderRequest,
  type Verification,
} from '../providers/types';
import { readFileSync } from 'node:fs';
import { CONFIG_DEFAULTS, ConfigError, paypalWebhookIds, type Config } from '../config';
import { createPaypalRest, type PaypalRest } from '../providers/paypal-rest';
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
  /** SETTLE_PAYPAL_WEBHOOK_ID and SETTLE_PAYPAL_WEBHOOK_IDS; none: every PayPal request is refused (401). */
  paypalWebhookIds?: string[];
  /** SETTLE_PAYPAL_CERT_PATH's PEM: PayPal's signatures are verified with it, nothing is fetched. */
  paypalCertificatePem?: string;
  /** Tests only: where PayPal certificate URLs are fetched from (a loopback stand-in; src/providers/paypal.ts). */
  paypalCertOrigin?: string;
  /** Tests only: the roots a fetched PayPal chain must end in (default: Node's bundled ones). */
  paypalTrustedCas?: string[];
  /**
   * PayPal's REST API with the recovery sweep's credentials (SETTLE_PAYPAL_CLIENT_ID and _SECRET):
   * every PayPal event is confirmed there before it is admitted. Unset: the residual risk is logged.
   */
  paypalApi?: PaypalRest;
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
    Partial<
      Pick<
        Config,
        | 'paypalWebhookId'
        | 'paypalWebhookIds'
        | 'paypalCertPath'
        | 'paypalClientId'
        | 'paypalClientSecret'
        | 'paypalApiBase'
      >
    >,
): ProviderRouteOptions {
  return {
    stripeWebhookSecrets: config.stripeWebhookSecrets,
    adyenHmacKeys: config.adyenHmacKeys,
    adyenBasicAuth: config.adyenBasicAuth,
    paypalWebhookIds: paypalWebhookIds(config),
    ...(config.paypalClientId && config.paypalClientSecret
      ? {
          paypalApi: createPaypalRest({
            clientId: config.paypalClientId,
            clientSecret: config.paypalClientSecret,
            apiBase: config.paypalApiBase ?? CONFIG_DEFAULTS.paypalApiBase!,
            timeoutMs: PAYPAL_CONFIRM_TIMEOUT_MS,
          }),
        }
      : {}),
    // Read once at start: a path that cannot be read stops the gateway, naming the variable.
    paypalCertificatePem: config.paypalCertPath ? readPaypalCertificate(config.paypalCertPath) : undefined,
    providerMode: config.providerMode,
  };
}

/**
 * One confirmation request's limit at PayPal's API, well inside a provider's patience for an answer:
 * past it the delivery is a 503 and PayPal retries it.
 */
const PAYPAL_CONFIRM_TIMEOUT_MS = 5_000;

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

  /**
   * A provider that posts one event per request (Stripe, PayPal): verify, hold to the edge rule,
   * confirm with the provider's API (where the adapter can), take the transmission once (where the
   * signature binds the body only weakly), admit.
   */
  const singleEventRoute = (provider: 'stripe' | 'paypal', label: string, adapter: ProviderAdapter) => {
    const path = `/webhooks/${provider}`;
    app.post(path, async (request, reply) => {
      const received = providerRequest(request);
      const verified = await adapter.verify(received);
      if (!verified.ok) return refuseVerification(reply, label, verified);
      // Signed, then held to the edge rule before anything is admitted (the order of /webhooks/payments).
      const unreadable = refuseUnreadableBody(request, reply);
      if (unreadable) return unreadable;
      const adapted = takenInMode(label, adapter.adapt(verified.items[0]), verified.mode);
      if (adapted.kind !== 'invalid') request.eventId = adapted.eventId;
      // Confirmed before the transmission is taken: a forged body that the API refutes does not use up
      // the transmission ID of the genuine delivery it copied.
      if (adapter.confirm && (adapted.kind === 'payment' || adapted.kind === 'unmatched')) {
        if (await refusedUnconfirmed(reply, provider, label, adapted, adapter.confirm)) return reply;
      }
      // Taken whatever the event is (ignored, unreadable too): a second body under the same signature
      // could be any event.
      if (verified.transmission) {
        if (await refusedTransmission(reply, provider, label, verified.transmission, received)) return reply;
      }
      const outcome = await admitProviderEvent(deps, provider, adapted);
      request.ingestOutcome = outcome.status;
      return answerOne(reply, outcome, adapted);
    });
    refuseOtherMethods(app, path, ['POST']);
  };

  /**
   * Takes the transmission once. A second body under a transmission ID already taken is refused (409)
   * and counted: the signature cannot tell it from the first. The same body again passes on to the
   * ordinary duplicate answer. True when the reply is sent (a boolean: a reply is a thenable, and an
   * async function returning it would hand back what it resolves to).
   */
  const refusedTransmission = async (
    reply: FastifyReply,
    provider: ProviderName,
    label: string,
    transmission: { id: string; header: string },
    received: ProviderRequest,
  ): Promise<boolean> => {
    const taken = await takeProviderTransmission(deps, provider, transmission, received.rawBody);
    if (taken.status === 'taken') return false;
    if (taken.status === 'unavailable') {
      refuseUnavailable(reply, taken.dependency);
    } else if (taken.status === 'invalid') {
      reject(reply, 400, ErrorCode.InvalidEvent, describeIssues(taken.issues), { issues: taken.issues });
    } else {
      providerDeliveriesRefusedTotal.inc({ provider, reason: ErrorCode.TransmissionReused });
      deps.logger?.warn(
        { provider, transmission: shortHash(transmission.id), body: taken.bodySha256.slice(0, 12) },
        `${label} delivery refused: its transmission ID already carried another body (a forged twin?)`,
      );
      reject(
        reply,
        409,
        ErrorCode.TransmissionReused,
        `this ${transmission.header} already carried another body; the first stands`,
      );
    }
    return true;
  };

  /**
   * An event the provider's API does not confirm is refused (422) and counted; its API down is a 503.
   * True when the reply is sent.
   */
  const refusedUnconfirmed = async (
    reply: FastifyReply,
    provider: ProviderName,
    label: string,
    adapted: Extract<AdaptedEvent, { kind: 'payment' | 'unmatched' }>,
    confirm: NonNullable<ProviderAdapter['confirm']>,
  ): Promise<boolean> => {
    const confirmation = await confirm(adapted);
    if (confirmation.kind === 'confirmed') return false;
    if (confirmation.kind === 'unavailable') {
      deps.logger?.warn(
        { provider, event: shortHash(adapted.eventId), reason: confirmation.reason },
        `${label} event not admitted: its API could not confirm it`,
      );
      reject(reply, 503, ErrorCode.ProviderUnavailable, `${label}'s API is unreachable; retry later`, {
        retryAfterSeconds: confirmation.retryAfterSeconds,
      });
      return true;
    }
    providerDeliveriesRefusedTotal.inc({ provider, reason: ErrorCode.EventNotConfirmed });
    deps.logger?.warn(
      { provider, event: shortHash(adapted.eventId), fields: confirmation.fields },
      `${label} event refused: ${confirmation.reason}`,
    );
    reject(
      reply,
      422,
      ErrorCode.EventNotConfirmed,
      `${label}'s API does not confirm this event (${confirmation.fields.join(', ')}); nothing was admitted`,
    );
    return true;
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
    webhookIds: deps.paypalWebhookIds,
    certificatePem: deps.paypalCertificatePem,
    certOrigin: deps.paypalCertOrigin,
    trustedCas: deps.paypalTrustedCas,
    api: deps.paypalApi,
  });
  if ((deps.paypalWebhookIds ?? []).length > 0 && !deps.paypalApi) {
    deps.logger?.warn(
      { provider: 'paypal' },
      'PayPal webhooks are taken on their signature alone, which covers only a CRC32 of the body: each ' +
        'transmission ID is taken once, but a body forged to the same CRC32 under a transmission settle has ' +
        'not seen yet would take effect. Set SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET to confirm ' +
        "every event with PayPal's API (docs/providers.md)",
    );
  }
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
    case 'unavailable':
      // Blocked egress is not forgery: the provider retries, and the delivery is judged then.
      return reject(
        reply,
        503,
        ErrorCode.ProviderUnavailable,
        `${provider} webhook not verified: ${verified.reason}`,
        {
          retryAfterSeconds: verified.retryAfterSeconds,
        },
      );
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
