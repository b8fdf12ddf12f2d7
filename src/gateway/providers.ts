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
import {
  inMode,
  type AdaptedEvent,
  type ProviderAdapter,
  type ProviderMode,
  type ProviderRequest,
  type Verification,
} from '../providers/types';
import type { ProviderModule } from '../providers/module';
import { PROVIDER_NAMES, PROVIDER_VARIABLES, PROVIDERS, type ProviderName } from '../providers/registry';
import { withProviderDefaults, type Config } from '../config';
import { shortHash } from '../lib/hash';
import type { Logger } from '../lib/logger';
import { answerAdmission, refuseOtherMethods, refuseUnavailable, reject } from './replies';
import type { Services } from '../app/services';

/** The providers' part of the configuration: each provider's variables, and SETTLE_PROVIDER_MODE. */
export type ProviderConfig = Partial<Pick<Config, keyof typeof PROVIDER_VARIABLES | 'providerMode'>>;

/** What the provider routes take from the configuration. */
export type ProviderRouteOptions = {
  /** Each provider's variables; unset ones take their defaults (no credentials: every request refused, 401). */
  providerConfig?: ProviderConfig;
  /** Tests only: options a provider's adapter takes beyond its variables (a loopback certificate origin, test roots). */
  providerTesting?: Partial<Record<ProviderName, Record<string, unknown>>>;
  /** SETTLE_PROVIDER_MODE; unset: events of either mode are taken. */
  providerMode?: ProviderMode;
};

export type ProviderRouteDeps = Services & ProviderRouteOptions & { logger?: Logger };

/**
 * The provider routes' part of the configuration. The gateway hands its whole dependencies to
 * registerProviderRoutes, so a caller spreads this into them and every option arrives.
 */
export function providerRouteOptions(config: ProviderConfig): ProviderRouteOptions {
  return { providerConfig: config, providerMode: config.providerMode };
}

/**
 * `POST /webhooks/<provider>` for every provider in the table (src/providers/registry.ts): the
 * provider's adapter verifies and translates, then every payment event takes the path of
 * `/webhooks/payments` (src/app/admit-payment-event.ts). Under SETTLE_PROVIDER_MODE, a verified event of
 * the other mode is acknowledged as ignored and writes nothing.
 */
export function registerProviderRoutes(app: FastifyInstance, deps: ProviderRouteDeps) {
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
   * A provider that posts one event per request: verify, hold to the edge rule,
   * confirm with the provider's API (where the adapter can), take the transmission once (where the
   * signature binds the body only weakly), admit.
   */
  const singleEventRoute = (provider: ProviderName, label: string, adapter: ProviderAdapter) => {
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

  /**
   * A provider that posts a batch: translate the whole batch first (an item settle cannot read refuses
   * the batch before any admission), then acknowledge with the provider's `accepted` only once every
   * item is durably admitted (src/app/admit-provider-event.ts). The batch's mode is every item's.
   */
  const batchRoute = (
    provider: ProviderName,
    label: string,
    adapter: ProviderAdapter,
    route: Extract<ProviderModule['route'], { kind: 'batch' }>,
  ) => {
    const path = `/webhooks/${provider}`;
    app.post(path, async (request, reply) => {
      const verified = await adapter.verify(providerRequest(request));
      if (!verified.ok) return refuseVerification(reply, label, verified);
      // Signed, then held to the edge rule before anything is admitted (the order of /webhooks/payments).
      const unreadable = refuseUnreadableBody(request, reply);
      if (unreadable) return unreadable;
      const batch = verified.items.map((item) => takenInMode(label, adapter.adapt(item), verified.mode));
      const bad = batch.findIndex((item) => item.kind === 'invalid');
      if (bad >= 0) {
        const item = batch[bad] as Extract<AdaptedEvent, { kind: 'invalid' }>;
        const itemPath = route.itemPath(bad, item.path);
        return reject(reply, 400, ErrorCode.InvalidEvent, `${itemPath}: ${item.message}`, {
          issues: [{ path: itemPath, message: item.message }],
        });
      }
      const admitted = await admitProviderBatch(deps, provider, batch);
      if (admitted.status === 'unavailable') {
        request.ingestOutcome = 'unavailable';
        return refuseUnavailable(reply, admitted.dependency);
      }
      request.ingestOutcome = Object.entries(admitted.counts)
        .map(([status, n]) => `${status}:${n}`)
        .join(',');
      return reply.code(200).type('text/plain; charset=utf-8').send(route.accepted);
    });
    refuseOtherMethods(app, path, ['POST']);
  };

  const config = withProviderDefaults(deps.providerConfig ?? {});
  for (const name of PROVIDER_NAMES) {
    const module: ProviderModule = PROVIDERS[name];
    const adapter = module.webhookAdapter(config, {
      logger: deps.logger,
      testing: deps.providerTesting?.[name],
    });
    if (module.route.kind === 'batch') batchRoute(name, module.label, adapter, module.route);
    else singleEventRoute(name, module.label, adapter);
  }
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
