/**
 * `settle codec-server`: Temporal's remote codec protocol over settle's payload codec, for the
 * Temporal UI and `temporal workflow show --codec-endpoint`. POST …/decode and …/encode take and
 * answer `{"payloads":[{"metadata":{<key>:<base64>},"data":<base64>}]}` (the proto3 JSON of Payloads);
 * only the last path segment names the operation, as the protocol asks.
 *
 * Every call needs settle's codec token: `Authorization: Bearer <token>` (the CLI's `--codec-auth`),
 * or the token as the path segment before the operation, `/<token>/decode`, for a Temporal UI
 * without single sign-on, which has no way to send a header of its own (docs/operations.md). Without
 * it, or with another, the answer is 401 and nothing is decoded; the token is checked as soon as the
 * request line and headers are in, so an unauthenticated body is never read (the 401 closes the
 * connection). The browser's cross-origin calls are answered for the one configured UI origin only.
 */
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createLimitedServer, type ListenerLimits } from '../lib/listener-limits';
import type { Logger } from '../lib/logger';

/** A UI asks for a whole history's payloads at once; Temporal's own limit per payload is 2 MB. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** How long the browser may cache a preflight's answer. */
const PREFLIGHT_MAX_AGE_S = 600;
/** The request headers the Temporal UI and CLI send. */
const ALLOWED_HEADERS = 'authorization, content-type, x-namespace';

/** The settings `settle codec-server` and `npm start`'s codec server read (src/config/schema.ts). */
export const CODEC_SERVER_SETTINGS = [
  'payloadKeys',
  'payloadKeysFile',
  'codecToken',
  'codecPort',
  'codecCorsOrigin',
  'host',
  'temporalNamespace',
  'requestTimeoutMs',
  'headersTimeoutMs',
  'idleTimeoutMs',
  'maxConnections',
] as const;

export type CodecServerOptions = {
  codec: PayloadCodec;
  /** SETTLE_CODEC_TOKEN. */
  token: string;
  /** The namespace whose payloads these keys encrypt: a call naming another (X-Namespace) is refused. */
  namespace: string;
  /** The Temporal UI's origin (SETTLE_CODEC_CORS_ORIGIN); none, no browser call is answered. */
  corsOrigins: string[];
  /** SETTLE_REQUEST_TIMEOUT, …, SETTLE_MAX_CONNECTIONS; unset: their defaults. */
  limits?: ListenerLimits;
  logger: Logger;
};

type JsonPayload = { metadata?: Record<string, string>; data?: string };

function rejected(reply: FastifyReply, status: number, error: string, message: string) {
  return reply.code(status).send({ status: 'rejected', error, message });
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The request's payloads, or why they are not Payloads JSON. */
function payloadsOf(body: unknown): Payload[] | string {
  const list = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) return 'the body must be {"payloads": [...]}';
  const payloads: Payload[] = [];
  for (const item of list as unknown[]) {
    if (typeof item !== 'object' || item === null) return 'each payload must be an object';
    const { metadata = {}, data = '' } = item as JsonPayload;
    if (typeof metadata !== 'object' || metadata === null) return 'a payload metadata must be an object';
    const entries = Object.entries(metadata);
    if (typeof data !== 'string' || !BASE64.test(data)) return 'a payload data must be base64';
    if (entries.some(([, value]) => typeof value !== 'string' || !BASE64.test(value))) {
      return 'payload metadata values must be base64';
    }
    payloads.push({
      metadata: Object.fromEntries(entries.map(([key, value]) => [key, Buffer.from(value, 'base64')])),
      data: Buffer.from(data, 'base64'),
    });
  }
  return payloads;
}

function toJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  };
}

/** The codec token, in the Authorization header or as the path segment before the operation. */
function presentsToken(request: FastifyRequest, token: string): boolean {
  const pathToken = (request.params as { token?: string } | undefined)?.token;
  const header = request.headers.authorization;
  const given = pathToken ?? (header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined);
  return given !== undefined && sameSecret(given, token);
}

/** The Fastify app of the codec server; {@link startCodecServer} listens with it. */
function buildCodecServer(options: CodecServerOptions): FastifyInstance {
  const { codec, token, namespace, corsOrigins, logger } = options;
  // No request logging: the path of a UI's call holds the token.
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_BODY_BYTES,
    return503OnClosing: true,
    serverFactory: (handler) => createLimitedServer(handler, options.limits),
  });

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (!corsOrigins.includes(origin)) {
      return rejected(reply, 403, 'origin_not_allowed', 'this codec server answers only its Temporal UI');
    }
    reply
      .header('access-control-allow-origin', origin)
      .header('access-control-allow-credentials', 'true')
      .header('vary', 'origin');
  });

  // Preflight: the UI's calls carry Content-Type: application/json and X-Namespace (and Authorization).
  app.options('*', async (_request, reply) =>
    reply
      .code(204)
      .header('access-control-allow-methods', 'POST')
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_S))
      .send(),
  );

  app.get('/healthz', async () => ({ status: 'ok' }));

  // The token before anything reads the body: a refused caller's body is never parsed, and the
  // connection closes with the 401, so no unread body of it is read away either.
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS' || (request.method === 'GET' && request.url === '/healthz')) return;
    if (presentsToken(request, token)) return;
    reply.header('connection', 'close');
    return rejected(reply, 401, 'unauthorized', 'send Authorization: Bearer <SETTLE_CODEC_TOKEN>');
  });

  const operate =
    (operation: 'encode' | 'decode') => async (request: FastifyRequest, reply: FastifyReply) => {
      const asked = request.headers['x-namespace'];
      if (typeof asked === 'string' && asked !== '' && asked !== namespace) {
        return rejected(
          reply,
          404,
          'namespace_not_served',
          `this codec server serves namespace "${namespace}"`,
        );
      }
      const payloads = payloadsOf(request.body);
      if (typeof payloads === 'string') return rejected(reply, 400, 'invalid_payloads', payloads);
      try {
        const converted =
          operation === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
        return { payloads: converted.map(toJson) };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        logger.warn({ operation, payloads: payloads.length }, `codec server: ${message}`);
        return rejected(reply, 422, 'payload_not_decodable', message);
      }
    };
  for (const operation of ['encode', 'decode'] as const) {
    // The token in the header, or as the segment before the operation (a UI's endpoint).
    app.post(`/${operation}`, operate(operation));
    app.post(`/:token/${operation}`, operate(operation));
  }
  return app;
}

/** Listens on host:port (0 picks a free one); `close` stops accepting and finishes open calls. */
export async function startCodecServer(
  options: CodecServerOptions & { host: string; port: number },
): Promise<{ app: FastifyInstance; url: string; close(): Promise<void> }> {
  const app = buildCodecServer(options);
  await app.listen({ host: options.host, port: options.port });
  const { port } = app.server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    app,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    async close() {
      const closing = app.close();
      // Keep-alive connections (a browser's) would hold close() open: cut them after a grace.
      const cut = setTimeout(() => app.server.closeAllConnections(), 2_000);
      await closing;
      clearTimeout(cut);
    },
  };
}
