import Stripe from 'stripe';
import { retryAfterMs } from '../../lib/retry-after';
import {
  RecoveryFault,
  type ListedEvent,
  type RecoveryCursor,
  type ListStart,
  type RecoverySource,
} from '../recovery-source';
import { createStripeAdapter, STRIPE_ACTED_ON_TYPES } from './adapter';

/** Stripe's largest page. */
const PAGE_SIZE = 100;

export type StripeRecoveryOptions = {
  /** SETTLE_STRIPE_API_KEY: a restricted key with read access to Events is enough. */
  apiKey: string;
  /** SETTLE_STRIPE_API_BASE, scheme://host[:port]. */
  apiBase: string;
  /** One request's limit: a hung API ends the listing with `unavailable` after it. */
  timeoutMs?: number;
  /** Events a page; Stripe's largest unless a test asks for less. */
  pageSize?: number;
};

/**
 * Stripe's events API (`GET /v1/events`) through the `stripe` package's own list and auto-pagination,
 * oldest first: from the cursor with `ending_before`, which the package pages backwards (each page
 * read oldest first), so an event is handed out only after every older one. Every type settle acts
 * on is listed, delivered or not (`delivery_success` is not asked): the claim decides, and
 * docs/operations.md says why. The package retries nothing itself; the caller's retry does.
 */
export function createStripeRecoverySource(options: StripeRecoveryOptions): RecoverySource {
  const base = new URL(options.apiBase);
  const stripe = new Stripe(options.apiKey, {
    host: base.hostname,
    port: base.port || (base.protocol === 'http:' ? 80 : 443),
    protocol: base.protocol === 'http:' ? 'http' : 'https',
    maxNetworkRetries: 0,
    timeout: options.timeoutMs ?? 30_000,
    telemetry: false,
  });
  const types = [...STRIPE_ACTED_ON_TYPES];

  async function* pages(params: Stripe.EventListParams, signal?: AbortSignal): AsyncGenerator<Stripe.Event> {
    try {
      for await (const event of stripe.events.list({
        ...params,
        types,
        limit: options.pageSize ?? PAGE_SIZE,
      })) {
        if (signal?.aborted) return;
        yield event;
      }
    } catch (error) {
      throw stripeFault(error);
    }
  }

  return {
    provider: 'stripe',
    adapter: createStripeAdapter({ secrets: [] }),
    async *list(start: ListStart, signal?: AbortSignal): AsyncIterable<ListedEvent> {
      let after: RecoveryCursor;
      if ('since' in start) {
        // Stripe lists newest first and pages backwards only from an event: the first pass finds the
        // oldest event of the window, the second reads forward from it.
        let oldest: Stripe.Event | undefined;
        const gte = Math.floor(start.since.getTime() / 1000);
        for await (const event of pages({ created: { gte } }, signal)) oldest = event;
        if (!oldest || signal?.aborted) return;
        after = positionOf(oldest);
        yield { item: oldest, position: after };
      } else {
        after = start.after;
      }
      for await (const event of pages({ ending_before: after.eventId }, signal)) {
        yield { item: event, position: positionOf(event) };
      }
    },
  };
}

function positionOf(event: Stripe.Event): RecoveryCursor {
  const created = typeof event.created === 'number' ? event.created : 0;
  return { eventId: String(event.id), createdAt: new Date(created * 1000) };
}

/** A `stripe` package error as a recovery fault, by its `type` (stable across the package's versions). */
function stripeFault(error: unknown): RecoveryFault {
  if (error instanceof RecoveryFault) return error;
  const e = error as Partial<Stripe.errors.StripeError> & { type?: string };
  const status = e.statusCode;
  const detail = `Stripe ${status ?? 'request'}: ${e.message ?? String(error)}`;
  switch (e.type) {
    case 'StripeRateLimitError':
      return new RecoveryFault('rate_limited', detail, retryAfterMs(e.headers?.['retry-after']));
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      return new RecoveryFault(
        'unauthorized',
        `${detail} (SETTLE_STRIPE_API_KEY is revoked, expired or lacks read access to Events)`,
      );
    case 'StripeInvalidRequestError':
      if (e.code === 'resource_missing' && e.param === 'ending_before') {
        return new RecoveryFault('cursor_gone', detail);
      }
      return new RecoveryFault(status === 429 ? 'rate_limited' : 'refused', detail);
    case 'StripeAPIError':
    case 'StripeConnectionError':
      return new RecoveryFault('unavailable', detail, retryAfterMs(e.headers?.['retry-after']));
    default:
      if (status !== undefined && status >= 500) return new RecoveryFault('unavailable', detail);
      // A page that is not a list (a proxy's HTML, a malformed body) reads as an unavailable API.
      if (e.type === undefined)
        return new RecoveryFault('unavailable', `Stripe: ${String(e.message ?? error)}`);
      return new RecoveryFault('refused', detail);
  }
}
