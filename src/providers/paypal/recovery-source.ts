import { createPaypalAdapter, PAYPAL_ACTED_ON_TYPES } from './adapter';
import { createPaypalRest, type PaypalRestOptions } from './rest';
import {
  RecoveryFault,
  type ListedEvent,
  type RecoveryCursor,
  type ListStart,
  type RecoverySource,
} from '../recovery-source';
import { field } from '../types';

/** PayPal's largest page of webhook events. */
const PAGE_SIZE = 300;
/** The window is listed in slices this long, oldest first: each slice is read whole, then sorted. */
const SLICE_MS = 6 * 3_600_000;
/** A slice with more pages than this is refused rather than held in memory without end. */
const MAX_PAGES_PER_SLICE = 200;

export type PaypalRecoveryOptions = PaypalRestOptions & {
  /** Events a page; PayPal's largest unless a test asks for less. */
  pageSize?: number;
};

type Listed = { item: Record<string, unknown>; position: RecoveryCursor };

/**
 * PayPal's webhook events API (`GET /v1/notifications/webhooks-events`, start_time/end_time,
 * page_size, paging by the `next` link), through the REST client of rest.ts (an OAuth2
 * client-credentials token renewed before it expires). PayPal pages newest first and states no
 * order within a page, so the window is read in six-hour slices, each read whole and handed out
 * oldest first (create_time, then ID): an event is handed out only after every older one. A `next`
 * link is followed on the configured base only (its path and query), never on the host it names.
 * Events the API lists are authenticated by the API itself, as Stripe's are.
 */
export function createPaypalRecoverySource(options: PaypalRecoveryOptions): RecoverySource {
  const base = new URL(options.apiBase);
  const now = options.now ?? Date.now;
  const types = new Set(PAYPAL_ACTED_ON_TYPES);
  const rest = createPaypalRest(options);
  const get = (url: URL, signal?: AbortSignal) => rest.get(url, { signal });

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
