import { timingSafeEqual } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type pg from 'pg';
import { ErrorCode } from '../errors';
import { inspectEvent } from '../inspect';
import { shortHash } from '../lib/hash';
import type { Logger } from '../lib/logger';
import { registerOperatorRoutes } from './operations';
import { registerPaymentRoutes } from './payments';
import { checkNamespace, type TemporalProblem } from '../temporal-connection';
import { registerReminderRoutes } from './reminders';
import { reject } from './replies';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the body names an event; logged only as a short hash. */
    eventId?: string;
    ingestOutcome?: string;
  }
}

/** Payment webhooks are at most 256 KiB. */
export const MAX_BODY_BYTES = 256 * 1024;

export type GatewayDependencies = {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  webhookSecrets: string[];
  apiToken: string | undefined;
  logger: Logger;
  /** Accept reminder targets on private and loopback addresses (SETTLE_ALLOW_PRIVATE_TARGETS). */
  allowPrivateTargets?: boolean;
};

export function buildGateway(deps: GatewayDependencies): FastifyInstance {
  // Fastify's own request logging would write URLs, which carry event IDs; settle logs its own line.
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, return503OnClosing: true });

  // Keep the raw bytes: the signature is over the body exactly as sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );

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

  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, _request, reply) => {
    if (error.statusCode === 413)
      return reject(reply, 413, ErrorCode.PayloadTooLarge, 'body is larger than 256 KiB');
    if (error.statusCode === 415 || error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reject(reply, 415, ErrorCode.UnsupportedMediaType, 'content type must be application/json');
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reject(reply, error.statusCode, ErrorCode.InvalidEvent, error.message);
    }
    deps.logger.error({ err: { message: error.message, code: error.code } }, 'unhandled gateway error');
    return reply.code(500).send({ status: 'error', error: 'internal', message: 'internal error' });
  });

  app.setNotFoundHandler((_request, reply) => reject(reply, 404, ErrorCode.NotFound, 'no such route'));

  registerOperatorRoutes(app, deps);
  registerPaymentRoutes(app, deps);
  refuseOtherMethods(app, '/webhooks/payments', ['POST']);
  registerReminderRoutes(app, deps);
  refuseOtherMethods(app, '/reminders', ['POST']);
  refuseOtherMethods(app, '/reminders/:deliveryId', ['GET', 'DELETE']);

  app.get('/healthz', async () => ({ status: 'ok' }));

  const namespaceCheck = cachedNamespaceCheck(deps.client);
  app.get('/readyz', async (_request, reply) => {
    const [postgres, problem] = await Promise.all([
      deps.pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      namespaceCheck(),
    ]);
    const temporal = problem === undefined;
    const ready = postgres && temporal;
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not_ready',
      postgres,
      temporal,
      // Unreachable needs no words; a missing namespace or refused credentials are named.
      ...(problem && problem.code !== 'unreachable'
        ? { temporal_error: problem.code, message: problem.message }
        : {}),
    });
  });

  app.get('/events/:eventId', async (request, reply) => {
    if (!authorized(request, deps.apiToken)) {
      return reject(reply, 401, ErrorCode.Unauthorized, 'a valid bearer token is required');
    }
    const { eventId } = request.params as { eventId: string };
    request.eventId = eventId;
    const inspection = await inspectEvent(deps.pool, deps.client, eventId);
    if (!inspection) return reject(reply, 404, ErrorCode.NotFound, 'settle has no record of this event');
    return reply.send(inspection);
  });
  refuseOtherMethods(app, '/events/:eventId', ['GET']);

  return app;
}

/** How long one DescribeNamespace answer stands for /readyz, so probes do not each cost a call. */
const READINESS_CACHE_MS = 2_000;

/** /readyz's Temporal check: the namespace exists and answers (DescribeNamespace), cached briefly. */
function cachedNamespaceCheck(client: Client): () => Promise<TemporalProblem | undefined> {
  let cached: { at: number; result: Promise<TemporalProblem | undefined> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > READINESS_CACHE_MS) {
      cached = {
        at: Date.now(),
        result: checkNamespace(client, 2_000),
      };
    }
    return cached.result;
  };
}

function refuseOtherMethods(app: FastifyInstance, url: string, allowed: string[]) {
  const others = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => !allowed.includes(method));
  app.route({
    method: others,
    url,
    handler: (_request: FastifyRequest, reply: FastifyReply) => {
      reply.header('allow', allowed.join(', '));
      return reject(reply, 405, ErrorCode.MethodNotAllowed, `use ${allowed.join(' or ')}`);
    },
  });
}

/** Constant-time bearer token check; no configured token means the endpoint is closed. */
export function authorized(request: FastifyRequest, token: string | undefined): boolean {
  if (!token) return false;
  const header = request.headers.authorization ?? '';
  const presented = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
