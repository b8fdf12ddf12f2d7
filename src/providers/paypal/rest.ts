import { readBoundedText } from '../../lib/bounded-text';
import { retryAfterMs } from '../../lib/retry-after';
import { RecoveryFault } from '../recovery-source';
import { field } from '../types';

/** A page (or token answer) larger than this reads as an unavailable API. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** A token is renewed this long before PayPal says it expires. */
const TOKEN_MARGIN_MS = 60_000;

export type PaypalRestOptions = {
  /** SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET: the REST app's OAuth2 client credentials. */
  clientId: string;
  clientSecret: string;
  /** SETTLE_PAYPAL_API_BASE, scheme://host[:port] (https but for loopback; the schema checks it). */
  apiBase: string;
  /** One request's limit: a hung API is `unavailable` after it. */
  timeoutMs?: number;
  now?: () => number;
};

/** PayPal's REST API as settle reads it: authenticated GETs on the configured base. */
export type PaypalRest = {
  readonly base: URL;
  /**
   * One GET with a bearer token; a 401 renews the token once (it may have been revoked early). A
   * fault is a RecoveryFault: `rate_limited` (429), `unavailable` (5xx, no answer, not JSON),
   * `unauthorized` (401/403 again), `refused` (another 4xx). With `notFound: 'undefined'`, a 404 is
   * answered `undefined` instead.
   */
  get(url: URL, options?: { signal?: AbortSignal; notFound?: 'undefined' }): Promise<unknown>;
};

/**
 * PayPal's REST API with an OAuth2 client-credentials token (`POST /v1/oauth2/token`), kept until
 * shortly before PayPal says it expires. Shared by the recovery sweep (recovery-source.ts) and the
 * webhook's confirmation of a delivered event (paypal.ts).
 */
export function createPaypalRest(options: PaypalRestOptions): PaypalRest {
  const base = new URL(options.apiBase);
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 30_000;
  let token: { value: string; until: number } | undefined;

  async function request(
    url: URL,
    init: RequestInit,
    signal?: AbortSignal,
    notFound?: 'undefined',
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, {
        ...init,
        redirect: 'error',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : causeOf(error);
      throw new RecoveryFault('unavailable', `PayPal request: ${reason}`);
    }
    const retryAfter = retryAfterMs(response.headers.get('retry-after') ?? undefined);
    let text: string;
    try {
      text = await readBoundedText(
        response,
        MAX_RESPONSE_BYTES,
        (max) => new Error(`the answer is larger than ${max} bytes`),
      );
    } catch (error) {
      throw new RecoveryFault('unavailable', `PayPal ${response.status}: ${causeOf(error)}`, retryAfter);
    }
    if (response.status === 404 && notFound === 'undefined') return undefined;
    const detail = `PayPal ${response.status}: ${paypalMessage(text)}`;
    if (response.status === 429) throw new RecoveryFault('rate_limited', detail, retryAfter);
    if (response.status >= 500) throw new RecoveryFault('unavailable', detail, retryAfter);
    if (response.status === 401 || response.status === 403) {
      throw new RecoveryFault(
        'unauthorized',
        `${detail} (SETTLE_PAYPAL_CLIENT_ID / SETTLE_PAYPAL_CLIENT_SECRET refused, or the app lacks webhook access)`,
      );
    }
    if (response.status >= 400) throw new RecoveryFault('refused', detail);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // A proxy's HTML page, a truncated body: the API is not answering as itself.
      throw new RecoveryFault('unavailable', `PayPal ${response.status}: the answer is not JSON`);
    }
  }

  async function accessToken(signal?: AbortSignal): Promise<string> {
    if (token && token.until > now()) return token.value;
    const basic = Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64');
    const answer = await request(
      new URL('/v1/oauth2/token', base),
      {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: 'grant_type=client_credentials',
      },
      signal,
    );
    const value = field(answer, 'access_token');
    const expiresIn = field(answer, 'expires_in');
    if (typeof value !== 'string' || !value) {
      throw new RecoveryFault('unavailable', 'PayPal token answer has no access_token');
    }
    const lifetime = typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn * 1000 : 0;
    token = { value, until: now() + Math.max(0, lifetime - TOKEN_MARGIN_MS) };
    return value;
  }

  return {
    base,
    async get(url, { signal, notFound } = {}) {
      for (let attempt = 0; ; attempt += 1) {
        const bearer = await accessToken(signal);
        try {
          return await request(
            url,
            { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' } },
            signal,
            notFound,
          );
        } catch (error) {
          if (attempt === 0 && error instanceof RecoveryFault && error.kind === 'unauthorized') {
            token = undefined;
            continue;
          }
          throw error;
        }
      }
    },
  };
}

function paypalMessage(text: string): string {
  try {
    const body = JSON.parse(text) as unknown;
    const message = field(body, 'message') ?? field(body, 'error_description') ?? field(body, 'name');
    if (typeof message === 'string') return message.slice(0, 200);
  } catch {
    // not JSON
  }
  return 'no error message';
}

function causeOf(error: unknown): string {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  if (code) return code;
  return error instanceof Error ? error.message : String(error);
}
