import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { CONFIG_DEFAULTS } from '../config';

/**
 * What every settle listener holds a client to (docs/limits.md, "Slow and abusive clients"): the
 * gateway, its operator listener, the worker's metrics endpoint, the codec server and `npm start`'s
 * stand-in downstream. Each is made by {@link createLimitedServer} (a Fastify app through its
 * `serverFactory`), so none can listen without them; test/listener-limits.test.ts checks that no other
 * server is made in src/.
 */
export type ListenerLimits = {
  /** A request, headers and body, must have arrived in full this long after it began (408, closed). */
  requestTimeoutMs: number;
  /** Its request line and headers, this long after the connection opened or the last answer. */
  headersTimeoutMs: number;
  /** A kept-alive connection with no request for this long is closed. */
  idleTimeoutMs: number;
  /** Open connections at most; one more is closed as soon as it is accepted. */
  maxConnections: number;
};

/** The listener settings of the configuration (src/config/schema.ts). */
export const LISTENER_SETTINGS = [
  'requestTimeoutMs',
  'headersTimeoutMs',
  'idleTimeoutMs',
  'maxConnections',
] as const;

/** The configuration's defaults (SETTLE_REQUEST_TIMEOUT …), for a listener handed no configuration. */
export const DEFAULT_LISTENER_LIMITS: ListenerLimits = {
  requestTimeoutMs: CONFIG_DEFAULTS.requestTimeoutMs!,
  headersTimeoutMs: CONFIG_DEFAULTS.headersTimeoutMs!,
  idleTimeoutMs: CONFIG_DEFAULTS.idleTimeoutMs!,
  maxConnections: CONFIG_DEFAULTS.maxConnections!,
};

/**
 * How often Node looks for requests past their headers or request timeout: at most this long after a
 * timeout has passed, the request is answered 408 and its connection closed (Node's own default is 30 s).
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * The `error` codes of those answers: two of settle's error codes (domain/errors.ts ErrorCode), named
 * here so that lib imports no domain; test/unit/http-contract.test.ts holds them to that list.
 */
export const PARSER_REFUSAL_CODES = {
  headersTooLarge: 'headers_too_large',
  badRequest: 'bad_request',
} as const;

/** Node's own limit on the request line and headers together (its default); past it, a 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * An HTTP server holding every connection to `limits`, its request line and headers to
 * MAX_HEADER_BYTES; `limits` unset, the configuration's defaults hold. A Fastify app takes it as `serverFactory: (handler) => createLimitedServer(handler,
 * limits)`. What Node's parser refuses before any handler runs (headers too large, a request past its
 * timeout, bytes that are not HTTP) is answered with settle's error body and the connection closed.
 */
export function createLimitedServer(
  handler: Handler,
  limits: ListenerLimits = DEFAULT_LISTENER_LIMITS,
): Server {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  const server = createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout,
      keepAliveTimeout: limits.idleTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, headersTimeout),
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    handler,
  );
  // No byte either way for this long (a client that stopped reading its answer, too) closes the
  // connection; never sooner than the request timeout, which bounds a request still arriving.
  server.setTimeout(Math.max(limits.idleTimeoutMs, limits.requestTimeoutMs), (socket) => socket.destroy());
  server.maxConnections = limits.maxConnections;
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) =>
    answerClientError(error, socket, MAX_HEADER_BYTES),
  );
  return server;
}

/**
 * Node's HTTP parser answers these before any route; without this its answer has another body (or
 * none). Headers (the URL included) past `maxHeaderBytes` are a 431, a request that did not arrive in
 * time a 408, anything it cannot parse (a NUL or other control character in a header, a broken request
 * line) a 400; the connection is closed after.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket, maxHeaderBytes: number) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          PARSER_REFUSAL_CODES.headersTooLarge,
          `the request line and headers are larger than ${maxHeaderBytes / 1024} KiB`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, PARSER_REFUSAL_CODES.badRequest, 'the request did not arrive in time']
        : [400, PARSER_REFUSAL_CODES.badRequest, 'the request could not be parsed as HTTP'];
  const body = JSON.stringify({ status: 'rejected', error: code, message });
  // An answer already under way on this connection cannot be followed by another.
  const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !answering?.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
