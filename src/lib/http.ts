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

/** Only the start of a response body is kept, for the operator's `last_error`. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export function createHttpClient(): HttpClient {
  return { post };
}

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

function post(target: string, options: PostOptions): Promise<HttpResponse> {
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
      // A fresh connection per attempt: each one resolves, and is checked, again.
      agent: false,
      ...(options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup }),
      signal: options.signal,
    });
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(asRequestError(error));
    };
    const timer = setTimeout(() => {
      const timeout = new HttpRequestError('timeout', `no complete answer within ${options.timeoutMs} ms`);
      fail(timeout);
      request.destroy(timeout);
    }, options.timeoutMs);
    request.on('error', fail);
    request.on('response', (response) => {
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
