import type { Client } from '@temporalio/client';
import type { Health } from '../domain/api-contract';
import { METHODS } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import { eventIdSchema } from '../domain/payment-event';
import { classifyDatabaseFailure, ErrorCode } from '../domain/errors';
import { inspectEvent } from '../app/inspect';
import { CONFIG_DEFAULTS } from '../config';
import { withBoundedWait } from '../db/pool';
import { shortHash } from '../lib/hash';
import { createLimitedServer, type ListenerLimits } from '../lib/listener-limits';
import type { Logger } from '../lib/logger';
import { activeTracing } from '../tracing/tracing';
import { poolWaitTimeoutsTotal } from '../metrics/settle-metrics';
import { operatorViews, registerOperatorRoutes, type OperatorViews } from './operations';
import { registerPaymentRoutes } from './payments';
import { registerProviderRoutes, type ProviderRouteOptions } from './providers';
import { registerReminderRoutes } from './reminders';
import { MAX_BODY_BYTES, MAX_PARAM_LENGTH, REFUSED_BODY_DRAIN_MS } from './limits';
import { checkIdParam, refuseOtherMethods, refuseUnavailable, reject } from './replies';
import { presentsToken, requireBearerToken } from './auth';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the body names an event; logged only as a short hash. */
    eventId?: string;
    ingestOutcome?: string;
  }
}

export type GatewayDependencies = {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  webhookSecrets: string[];
  apiToken: string | undefined;
  logger: Logger;
  /** Accept reminder targets on private and loopback addresses (SETTLE_ALLOW_PRIVATE_TARGETS). */
  allowPrivateTargets?: boolean;
  /** SETTLE_DELIVERY_STUCK_AFTER, for the settle_open_exceptions gauge (default 5m). */
  deliveryStuckAfterMs?: number;
  /** SETTLE_REQUEST_TIMEOUT and the other listener limits (default: the configuration's defaults). */
  listenerLimits?: ListenerLimits;
  /** SETTLE_ADMISSION_WAIT: how long a request waits for a free PostgreSQL connection (default 2s). */
  admissionWaitMs?: number;
  /**
   * /metrics and /readyz's details (gateway/operations.ts), shared with the operator listener; unset:
   * made here, on `operatorPool` (default `pool`).
   */
  operator?: OperatorViews;
  /** The pool the operator views and the gateway's own bookkeeping read on (default `pool`). */
  operatorPool?: pg.Pool;
} & ProviderRouteOptions;

export function buildGateway(deps: GatewayDependencies): FastifyInstance {
  // Fastify's own request logging would write URLs, which carry event IDs; settle logs its own line.
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_BODY_BYTES,
    return503OnClosing: true,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Timeouts and the connection cap; what Node's HTTP parser refuses before any route (headers too
    // large, a request past its timeout, malformed bytes) is answered there (lib/listener-limits.ts).
    serverFactory: (handler) => createLimitedServer(handler, deps.listenerLimits),
    // The router's own refusals (a bad percent-encoding, a parameter past MAX_PARAM_LENGTH).
    frameworkErrors: (error, _request, reply) => {
      void answerRouterError(error, reply, deps.logger);
    },
  });

  // Every method Node parses can reach a route, so an unexpected one (QUERY, PROPFIND, …) is a 405.
  // None has a body settle reads: QUERY too, whose missing content type Fastify would refuse first.
  for (const method of METHODS) {
    if (method === 'CONNECT') continue;
    const known = app.supportedMethods.includes(method);
    if (!known || method === 'QUERY') app.addHttpMethod(method, { hasBody: false, overrideExisting: known });
  }

  // Keep the raw bytes: the signature is over the body exactly as sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );

  // With tracing on, a span per request (tracing/tracing.ts). An incoming `traceparent` is continued only
  // from a caller that presents the bearer token on a route that asks for it; a webhook's (its
  // signature not yet verified) or any other unauthenticated caller's is a link on a new trace, so
  // no outsider chooses settle's trace ID or its sampling.
  activeTracing()?.instrumentGateway(app, {
    continuesTrace: (request) =>
      request.routeOptions.config.bearerToken === true && presentsToken(request, deps.apiToken),
  });

  drainRefusedBodies(app);

  app.addHook('onResponse', async (request, reply) => {
    deps.logger.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ...(request.eventId ? { event: shortHash(request.eventId) } : {}),
        ...(request.ingestOutcome ? { outcome: request.ingestOutcome } : {}),
      },
      'request',
    );
  });

  // Every status the gateway sends has the documented error body and never repeats the URL or an ID.
  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, _request, reply) => {
    if (error.statusCode === 413) {
      // Fastify would close the connection with the rest of the body unread; its framing is intact,
      // so the answer keeps the connection and drainRefusedBodies reads the rest away.
      reply.removeHeader('connection');
      return reject(reply, 413, ErrorCode.PayloadTooLarge, 'body is larger than 256 KiB');
    }
    if (error.statusCode === 415 || error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reject(reply, 415, ErrorCode.UnsupportedMediaType, 'content type must be application/json');
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reject(reply, 400, ErrorCode.BadRequest, 'the request could not be read');
    }
    // A route's database call failed: a 503 only when PostgreSQL is really unavailable.
    const failure = classifyDatabaseFailure(error);
    if (error.statusCode === undefined && failure === 'unavailable') {
      return refuseUnavailable(reply, 'postgres');
    }
    if (failure === 'invalid_data') {
      return reject(reply, 400, ErrorCode.InvalidData, 'the request holds a value PostgreSQL cannot store');
    }
    return internalError(reply, deps.logger, error);
  });

  app.setNotFoundHandler((_request, reply) => reject(reply, 404, ErrorCode.NotFound, 'no such route'));

  // Requests wait a bounded time for a PostgreSQL connection: past it a 503 with Retry-After, never
  // a queue without bound (the operator routes read on their own, cached: operations.ts).
  const admissionWaitMs = deps.admissionWaitMs ?? CONFIG_DEFAULTS.admissionWaitMs!;
  const requestDeps = {
    ...deps,
    pool: withBoundedWait(deps.pool, admissionWaitMs, () => poolWaitTimeoutsTotal.inc()),
  };

  const operatorPool = deps.operatorPool ?? deps.pool;
  const operator = deps.operator ?? operatorViews({ ...deps, pool: operatorPool });

  requireBearerToken(app, deps.apiToken);
  registerOperatorRoutes(app, { ...deps, pool: operatorPool, operator });
  registerPaymentRoutes(app, requestDeps);
  refuseOtherMethods(app, '/webhooks/payments', ['POST']);
  registerProviderRoutes(app, requestDeps);
  registerReminderRoutes(app, requestDeps);
  refuseOtherMethods(app, '/reminders', ['POST']);
  refuseOtherMethods(app, '/reminders/:deliveryId', ['GET', 'DELETE']);

  app.get('/healthz', async () => ({ status: 'ok' }) satisfies Health);
  for (const url of ['/healthz', '/readyz', '/metrics', '/openapi.json'])
    refuseOtherMethods(app, url, ['GET']);

  // Up or down for every prober; why Temporal refuses settle only to a bearer of the API token (the
  // operator listener tells it to anyone who reaches it).
  app.get('/readyz', async (request, reply) => {
    const { ready, body } = await operator.readiness();
    const { status, postgres, temporal } = body;
    return reply
      .code(ready ? 200 : 503)
      .send(presentsToken(request, deps.apiToken) ? body : { status, postgres, temporal });
  });

  app.get('/events/:eventId', { config: { bearerToken: true } }, async (request, reply) => {
    const { eventId } = request.params as { eventId: string };
    const paramIssue = checkIdParam(eventId, 'eventId', eventIdSchema);
    if (paramIssue) {
      return reject(reply, 400, ErrorCode.InvalidEvent, `${paramIssue.path}: ${paramIssue.message}`, {
        issues: [paramIssue],
      });
    }
    request.eventId = eventId;
    const inspection = await inspectEvent(requestDeps.pool, deps.client, eventId);
    if (!inspection) return reject(reply, 404, ErrorCode.NotFound, 'settle has no record of this event');
    return reply.send(inspection);
  });
  refuseOtherMethods(app, '/events/:eventId', ['GET']);

  return app;
}

function answerRouterError(error: { code: string; message: string }, reply: FastifyReply, logger: Logger) {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return reject(
      reply,
      414,
      ErrorCode.UriTooLong,
      `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`,
    );
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    return reject(reply, 400, ErrorCode.BadRequest, 'the URL is not valid percent-encoding');
  }
  return internalError(reply, logger, error);
}

function internalError(reply: FastifyReply, logger: Logger, error: { message: string; code?: string }) {
  logger.error({ err: { message: error.message, code: error.code } }, 'unhandled gateway error');
  return reject(reply, 500, ErrorCode.Internal, 'internal error');
}

/**
 * A request answered before its body was read (413, 415, 404, an unread body of any refusal): Node
 * reads the rest and discards it, so the client, which may read only once it has sent everything,
 * gets the answer instead of a reset. For at most REFUSED_BODY_DRAIN_MS after the answer, then the
 * connection closes; closing the gateway closes such connections at once.
 */
function drainRefusedBodies(app: FastifyInstance) {
  const draining = new Set<Socket>();
  app.addHook('onResponse', async (request: FastifyRequest) => {
    const incoming = request.raw;
    const socket = incoming.socket as Socket | null;
    if (incoming.complete || !socket || socket.destroyed) return;
    draining.add(socket);
    const done = () => {
      clearTimeout(timer);
      draining.delete(socket);
    };
    const timer = setTimeout(() => socket.destroy(), REFUSED_BODY_DRAIN_MS).unref();
    incoming.once('end', done);
    socket.once('close', done);
    incoming.resume();
  });
  app.addHook('preClose', async () => {
    for (const socket of draining) socket.destroy();
  });
}
