import { readBoundedText } from '../lib/bounded-text';
import { retryAfterMs } from '../lib/retry-after';
import { createPaypalAdapter, PAYPAL_ACTED_ON_TYPES } from './paypal';
import {
  RecoveryFault,
  type ListedEvent,
  type RecoveryCursor,
  type ListStart,
  type RecoverySource,
} from './recovery';
import { field } from './types';

/** PayPal's largest page of webhook events. */
const PAGE_SIZE = 300;
/** The window is listed in slices this long, oldest first: each slice is read whole, then sorted. */
const SLICE_MS = 6 * 3_600_000;
/** A slice with more pages than this is refused rather than held in memory without end. */
const MAX_PAGES_PER_SLICE = 200;
/** A page (or token answer) larger than this reads as an unavailable API. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** A token is renewed this long before PayPal says it expires. */
const TOKEN_MARGIN_MS = 60_000;

export type PaypalRecoveryOptions = {
  /** SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET: the REST app's OAuth2 client credentials. */
  clientId: string;
  clientSecret: string;
  /** SETTLE_PAYPAL_API_BASE, scheme://host[:port] (https but for loopback; the schema checks it). */
  apiBase: string;
  /** One request's limit: a hung API ends the listing with `unavailable` after it. */
  timeoutMs?: number;
  /** Events a page; PayPal's largest unless a test asks for less. */
  pageSize?: number;
  now?: () => number;
};

type Listed = { item: Record<string, unknown>; position: RecoveryCursor };

/**
 * PayPal's webhook events API (`GET /v1/notifications/webhooks-events`, start_time/end_time,
 * page_size, paging by the `next` link), with an OAuth2 client-credentials token
 * (`POST /v1/oauth2/token`) renewed before it expires. PayPal pages newest first and states no
 * order within a page, so the window is read in six-hour slices, each read whole and handed out
 * oldest first (create_time, then ID): an event is handed out only after every older one. A `next`
 * link is followed on the configured base only (its path and query), never on the host it names.
 * Events the API lists are authenticated by the API itself, as Stripe's are.
 */
export function createPaypalRecoverySource(options: PaypalRecoveryOptions): RecoverySource {
  const base = new URL(options.apiBase);
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const types = new Set(PAYPAL_ACTED_ON_TYPES);
  let token: { value: string; until: number } | undefined;

  async function request(url: URL, init: RequestInit, signal?: AbortSignal): Promise<unknown> {
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

  /** One GET with the token; a 401 renews the token once (it may have been revoked early). */
  async function get(url: URL, signal?: AbortSignal): Promise<unknown> {
    for (let attempt = 0; ; attempt += 1) {
      const bearer = await accessToken(signal);
      try {
        return await request(
          url,
          { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' } },
          signal,
        );
      } catch (error) {
        if (attempt === 0 && error instanceof RecoveryFault && error.kind === 'unauthorized') {
          token = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  /** Every event of one slice [from, to), oldest first. */
  async function slice(from: Date, to: Date, signal?: AbortSignal): Promise<Listed[] | undefined> {
    const url = new URL('/v1/notifications/webhooks-events', base);
    url.searchParams.set('page_size', String(options.pageSize ?? PAGE_SIZE));
    url.searchParams.set('start_time', from.toISOString());
    url.searchParams.set('end_time', to.toISOString());
    const found: Listed[] = [];
    let next: URL | undefined = url;
    for (let pages = 0; next; pages += 1) {
      if (signal?.aborted) return undefined;
      if (pages >= MAX_PAGES_PER_SLICE) {
        throw new RecoveryFault(
          'refused',
          `PayPal listed more than ${MAX_PAGES_PER_SLICE} pages between ${from.toISOString()} and ${to.toISOString()}`,
        );
      }
      const page = await get(next, signal);
      const events = field(page, 'events');
      if (!Array.isArray(events)) {
        throw new RecoveryFault('unavailable', 'PayPal answered a page with no events list');
      }
      for (const event of events) {
        const type = field(event, 'event_type');
        if (typeof type !== 'string' || !types.has(type)) continue;
        const item = event as Record<string, unknown>;
        const createdAt = new Date(String(field(event, 'create_time') ?? ''));
        const id = field(event, 'id');
        // The slices meet: an event at a slice's end is the next slice's.
        if (!Number.isNaN(createdAt.getTime()) && (createdAt < from || createdAt >= to)) continue;
        // One with no readable ID or time is still handed out: the adapter refuses it by its field.
        found.push({
          item,
          position: {
            eventId: typeof id === 'string' ? id : '',
            createdAt: Number.isNaN(createdAt.getTime()) ? from : createdAt,
          },
        });
      }
      next = nextLink(page);
    }
    return found.sort(
      (a, b) =>
        a.position.createdAt.getTime() - b.position.createdAt.getTime() ||
        (a.position.eventId < b.position.eventId ? -1 : a.position.eventId > b.position.eventId ? 1 : 0),
    );
  }

  /** The `next` link's path and query, on the configured base. */
  function nextLink(page: unknown): URL | undefined {
    const links = field(page, 'links');
    if (!Array.isArray(links)) return undefined;
    const link = links.find((entry) => field(entry, 'rel') === 'next');
    const href = field(link, 'href');
    if (typeof href !== 'string' || !href) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(href, base);
    } catch {
      throw new RecoveryFault('unavailable', 'PayPal answered a next link that is not a URL');
    }
    if (parsed.pathname !== '/v1/notifications/webhooks-events') {
      throw new RecoveryFault('unavailable', 'PayPal answered a next link to another resource');
    }
    return new URL(`${parsed.pathname}${parsed.search}`, base);
  }

  return {
    provider: 'paypal',
    adapter: createPaypalAdapter({}),
    async *list(start: ListStart, signal?: AbortSignal): AsyncIterable<ListedEvent> {
      const after = 'after' in start ? start.after : undefined;
      const end = new Date(now());
      let from = 'after' in start ? start.after.createdAt : start.since;
      while (from < end) {
        if (signal?.aborted) return;
        const to = new Date(Math.min(from.getTime() + SLICE_MS, end.getTime()));
        const events = await slice(from, to, signal);
        if (!events) return;
        for (const listed of events) {
          if (after && !isAfter(listed.position, after)) continue;
          if (signal?.aborted) return;
          yield listed;
        }
        from = to;
      }
    },
  };
}

/** Later in the listing's order (create_time, then ID) than `cursor`. */
function isAfter(position: RecoveryCursor, cursor: RecoveryCursor): boolean {
  const difference = position.createdAt.getTime() - cursor.createdAt.getTime();
  return difference > 0 || (difference === 0 && position.eventId > cursor.eventId);
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
