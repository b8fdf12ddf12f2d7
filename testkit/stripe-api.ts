import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type pg from 'pg';
import { paymentWorkflowId } from '../src/domain/ids';
import { payloadSha256 } from '../src/lib/hash';
import { adaptStripeEvent } from '../src/providers/stripe/adapter';
import { listenLocally } from './local-server';

/** What the next request gets instead of its page. */
export type StripeFault =
  | { status: 429; retryAfter?: string }
  | { status: 500 | 502 | 503 }
  | { status: 401 }
  /** Never answers (until the server closes). */
  | { hang: true };

type Stored = { event: Record<string, unknown>; seq: number; delivered: boolean };

export type StripeRequest = { at: number; path: string; query: URLSearchParams; authorization?: string };

/**
 * A local Stripe API serving `GET /v1/events` with Stripe's list semantics: newest first (created,
 * then the order events were added), `limit` (1–100, default 10), `starting_after` (older than that
 * event) and `ending_before` (the ones just newer than it, still newest first), `has_more`,
 * `created[gt|gte|lt|lte]` or `created=<ts>`, `types[]` (or `types[0]`…) / `type`, `delivery_success`. An unknown cursor
 * ID is Stripe's 400 `resource_missing`; a wrong key a 401. Faults queued with `failNext` answer the
 * next requests instead (429 with Retry-After, 5xx, 401, a hang). Every request is logged.
 */
export async function startStripeApi(options: { apiKey?: string } = {}) {
  const apiKey = options.apiKey ?? `sk_test_${randomBytes(16).toString('hex')}`;
  const events: Stored[] = [];
  const faults: StripeFault[] = [];
  /** Requests still answered normally before `pending` faults the next ones. */
  let okBeforeFault = 0;
  const requests: StripeRequest[] = [];
  let seq = 0;
  let key = apiKey;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${seq}`, ...headers });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, fields: Record<string, unknown>) =>
    send(res, status, { error: { type: 'invalid_request_error', ...fields } });

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push({
      at: Date.now(),
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
    });
    const fault = okBeforeFault > 0 ? (okBeforeFault--, undefined) : faults.shift();
    if (fault) {
      if ('hang' in fault) return;
      if (fault.status === 429) {
        return send(
          res,
          429,
          { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } },
          fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
        );
      }
      if (fault.status === 401) return error(res, 401, { message: 'Expired API Key provided: sk_test_***' });
      return send(res, fault.status, { error: { type: 'api_error', message: 'An unknown error occurred' } });
    }
    if (req.headers.authorization !== `Bearer ${key}`) {
      return error(res, 401, { message: 'Invalid API Key provided: sk_***' });
    }
    if (req.method !== 'GET' || url.pathname !== '/v1/events') {
      return error(res, 404, { message: `Unrecognized request URL (${req.method}: ${url.pathname})` });
    }
    return list(res, url.searchParams);
  };

  const newestFirst = () =>
    [...events].sort((a, b) => Number(b.event.created) - Number(a.event.created) || b.seq - a.seq);

  const list = (res: ServerResponse, q: URLSearchParams) => {
    const limit = q.has('limit') ? Number(q.get('limit')) : 10;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return error(res, 400, { param: 'limit', message: 'Invalid integer: limit must be 1 to 100' });
    }
    const all = newestFirst();
    const types = typesAsked(q);
    const created = Number(q.get('created'));
    const bounds = {
      gt: q.get('created[gt]'),
      gte: q.get('created[gte]'),
      lt: q.get('created[lt]'),
      lte: q.get('created[lte]'),
    };
    const delivery = q.get('delivery_success');
    const matches = (s: Stored) => {
      const at = Number(s.event.created);
      if (types.length && !types.includes(String(s.event.type))) return false;
      if (q.has('created') && at !== created) return false;
      if (bounds.gt !== null && !(at > Number(bounds.gt))) return false;
      if (bounds.gte !== null && !(at >= Number(bounds.gte))) return false;
      if (bounds.lt !== null && !(at < Number(bounds.lt))) return false;
      if (bounds.lte !== null && !(at <= Number(bounds.lte))) return false;
      if (delivery !== null && s.delivered !== (delivery === 'true')) return false;
      return true;
    };
    const after = q.get('starting_after');
    const before = q.get('ending_before');
    const cursor = after ?? before;
    let index = -1;
    if (cursor) {
      index = all.findIndex((s) => s.event.id === cursor);
      if (index < 0) {
        return error(res, 400, {
          code: 'resource_missing',
          param: after ? 'starting_after' : 'ending_before',
          message: `No such event: '${cursor}'`,
        });
      }
    }
    let page: Stored[];
    let hasMore: boolean;
    if (before) {
      const newer = all.slice(0, index).filter(matches);
      page = newer.slice(Math.max(0, newer.length - limit));
      hasMore = newer.length > limit;
    } else {
      const older = all.slice(index + 1).filter(matches);
      page = older.slice(0, limit);
      hasMore = older.length > limit;
    }
    send(res, 200, { object: 'list', url: '/v1/events', has_more: hasMore, data: page.map((s) => s.event) });
  };

  const server = await listenLocally(handle);

  return {
    apiKey,
    url: server.url,
    requests,
    /** Adds an event as Stripe would list it; `delivered: false` for one its webhook never reached. */
    add(event: Record<string, unknown>, state: { delivered?: boolean } = {}) {
      seq += 1;
      events.push({ event, seq, delivered: state.delivered ?? false });
    },
    /** Marks an event delivered (a later retry of Stripe's reached settle). */
    markDelivered(eventId: string) {
      const stored = events.find((s) => s.event.id === eventId);
      if (stored) stored.delivered = true;
    },
    /** Forgets an event (Stripe lists events for 30 days). */
    remove(eventId: string) {
      const index = events.findIndex((s) => s.event.id === eventId);
      if (index >= 0) events.splice(index, 1);
    },
    failNext(...next: StripeFault[]) {
      faults.push(...next);
    },
    /** Answers the next `ok` requests normally, then `fault`. */
    failAfter(ok: number, fault: StripeFault) {
      okBeforeFault = ok;
      faults.push(fault);
    },
    /** Revokes the key: every later request is a 401. */
    revokeKey() {
      key = `revoked_${randomBytes(8).toString('hex')}`;
    },
    /** Honours the original key again. */
    restoreKey() {
      key = apiKey;
    },
    close: () => server.close(),
  };
}

/** `types[]=a`, `types[0]=a` (how the `stripe` package encodes arrays) or `type=a`. */
export function typesAsked(q: URLSearchParams): string[] {
  return [...q.entries()]
    .filter(([name]) => /^types\[\d*\]$/.test(name) || name === 'type')
    .map(([, v]) => v);
}

export type StripeApi = Awaited<ReturnType<typeof startStripeApi>>;

/**
 * Stores Stripe events in `events` as their webhook's admission would have (the adapted canonical
 * event, its payload hash and workflow ID), without running them: "already applied" for a sweep,
 * in bulk. Only the events table is read by the door's duplicate check.
 */
export async function storeAsAdmitted(pool: pg.Pool, stripeEvents: Record<string, unknown>[]): Promise<void> {
  const rows = stripeEvents.map((item) => {
    const adapted = adaptStripeEvent(item);
    if (adapted.kind !== 'payment') throw new Error(`not a payment event: ${adapted.kind}`);
    return adapted.event;
  });
  for (let i = 0; i < rows.length; i += 1_000) {
    const batch = rows.slice(i, i + 1_000);
    await pool.query(
      `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, source)
       SELECT e->>'id', e->>'type', e, s, w, 'webhook'
         FROM unnest($1::jsonb[], $2::text[], $3::text[]) AS t(e, s, w)`,
      [
        batch.map((event) => JSON.stringify(event)),
        batch.map((event) => payloadSha256(event)),
        batch.map((event) => paymentWorkflowId(event.id)),
      ],
    );
  }
}
