import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isPublicAddress, parseAddress, TargetRefusedError } from './target-policy';

export type HttpResponse = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** Why a request got no HTTP answer: the caller retries `timeout` and `network`, never `target_refused`. */
export type HttpFailureKind = 'timeout' | 'network' | 'target_refused' | 'aborted';

export class HttpRequestError extends Error {
  constructor(
    readonly kind: HttpFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'HttpRequestError';
  }
}

export type PostOptions = {
  headers: Record<string, string>;
  body: string;
  /** The whole exchange, connect to last byte; past it the request is abandoned as a `timeout`. */
  timeoutMs: number;
  /** False: connect only to public addresses, checked on every address the host resolves to. */
  allowPrivateTargets: boolean;
  signal?: AbortSignal;
};

/** settle's one HTTP client: every downstream call (carrier, ERP, reminder endpoints) goes through it. */
export type HttpClient = { post(url: string, options: PostOptions): Promise<HttpResponse> };

/**
 * Wraps each call (tracing, src/tracing/: a client span, `traceparent` added to the headers); `call`
 * sends the request with the headers it is given. Without one, the request is sent as it is.
 */
export type CallWrapper = <T extends { status: number }>(
  url: string,
  headers: Record<string, string>,
  call: (headers: Record<string, string>) => Promise<T>,
) => Promise<T>;

/** Only the start of a response body is kept, for the operator's `last_error`. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * How long an idle connection waits for its next request. Under the common server keep-alive
 * timeouts (Node's 5 s), so a connection is seldom reused just as the server closes it; and short
 * enough that a changed DNS answer takes effect within seconds.
 */
const IDLE_CONNECTION_MS = 4_000;

/**
 * Connections are kept alive and reused: a delivery no longer pays a TCP (and TLS) handshake at both
 * ends. Each new connection resolves its host and, unless private targets are allowed, is checked on
 * every address it resolves to before it connects; a reused one goes to the address checked when it
 * was made. Private and public-only requests never share a pool, so a connection made without the
 * check can never serve a request that needs it.
 */
export function createHttpClient({ wrap }: { wrap?: CallWrapper } = {}): HttpClient {
  const pools = { publicOnly: keptAlivePool(), any: keptAlivePool() };
  return {
    post: (target, options) => {
      const pool = pools[options.allowPrivateTargets ? 'any' : 'publicOnly'];
      if (!wrap) return post(target, options, pool);
      return wrap(target, options.headers, (headers) => post(target, { ...options, headers }, pool));
    },
  };
}

type Pool = { http: http.Agent; https: https.Agent };

function keptAlivePool(): Pool {
  const options = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' } as const;
  return { http: new http.Agent(options), https: new https.Agent(options) };
}

const timedOut = (timeoutMs: number) =>
  new HttpRequestError('timeout', `no complete answer within ${timeoutMs} ms`);

/** Resolves like dns.lookup but fails when any address is not public, so the check covers what we connect to. */
const publicOnlyLookup = ((hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    if (!addresses.length || !addresses.every((entry) => isPublicAddress(entry.address))) {
      return callback(
        new TargetRefusedError(
          'the host resolves to a private, loopback, reserved or special-purpose address',
        ),
        '',
        0,
      );
    }
    if (options.all) return callback(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}) as unknown as LookupFunction;
type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

async function post(target: string, options: PostOptions, pool: Pool): Promise<HttpResponse> {
  const deadline = Date.now() + options.timeoutMs;
  try {
    return await exchange(target, options, pool, true);
  } catch (error) {
    // A kept-alive connection the server closed just as it was reused, before any answer: it goes
    // again at once on a fresh connection instead of costing a retry delay, within the same
    // deadline (a reminder's lease is sized to one request timeout).
    if (!(error instanceof StaleConnectionError)) throw error;
    const timeoutMs = deadline - Date.now();
    if (timeoutMs <= 0) throw timedOut(options.timeoutMs);
    return exchange(target, { ...options, timeoutMs }, pool, false);
  }
}

class StaleConnectionError extends Error {}

function exchange(target: string, options: PostOptions, pool: Pool, reuse: boolean): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return reject(new HttpRequestError('target_refused', 'the URL is not valid'));
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return reject(new HttpRequestError('target_refused', 'only http and https URLs are allowed'));
    }
    // A literal address is checked here; a name is checked on every address it resolves to.
    if (!options.allowPrivateTargets && parseAddress(url.hostname) && !isPublicAddress(url.hostname)) {
      return reject(
        new HttpRequestError(
          'target_refused',
          'the host is a private, loopback, reserved or special-purpose address',
        ),
      );
    }

    const transport = url.protocol === 'https:' ? https : http;
    const request = transport.request(url, {
      method: 'POST',
      headers: { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) },
      // `false`: a fresh connection, never one that might be stale.
      agent: reuse ? pool[url.protocol === 'https:' ? 'https' : 'http'] : false,
      ...(options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup }),
      signal: options.signal,
    });
    let answered = false;
    const fail = (error: Error) => {
      clearTimeout(timer);
      const code = (error as NodeJS.ErrnoException).code;
      const stale = request.reusedSocket && !answered && (code === 'ECONNRESET' || code === 'EPIPE');
      reject(stale ? new StaleConnectionError(error.message) : asRequestError(error));
    };
    const timer = setTimeout(() => {
      const timeout = timedOut(options.timeoutMs);
      fail(timeout);
      request.destroy(timeout);
    }, options.timeoutMs);
    request.on('error', fail);
    request.on('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      response.on('error', fail);
      response.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8'),
        });
      });
    });
    request.end(options.body);
  });
}

function asRequestError(error: Error): HttpRequestError {
  if (error instanceof HttpRequestError) return error;
  if (error instanceof TargetRefusedError) return new HttpRequestError('target_refused', error.message);
  if (error.name === 'AbortError') return new HttpRequestError('aborted', 'the request was cancelled');
  const code = (error as NodeJS.ErrnoException).code;
  return new HttpRequestError('network', code ? `connection failed (${code})` : 'connection failed');
}
