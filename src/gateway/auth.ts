import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ErrorCode } from '../domain/errors';
import { reject } from './replies';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route is for producers and operators inside the company: it needs `Authorization: Bearer <SETTLE_API_TOKEN>`. */
    bearerToken?: boolean;
  }
}

/**
 * The one bearer check: every route declared with `config: { bearerToken: true }` answers 401 before
 * its handler runs unless the request presents the token. No configured token closes those routes.
 */
export function requireBearerToken(app: FastifyInstance, token: string | undefined) {
  app.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.bearerToken || presentsToken(request, token)) return;
    return reject(reply, 401, ErrorCode.Unauthorized, 'a valid bearer token is required');
  });
}

/** Constant-time comparison of the presented token with the configured one. */
export function presentsToken(request: FastifyRequest, token: string | undefined): boolean {
  if (!token) return false;
  const header = request.headers.authorization ?? '';
  const presented = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
