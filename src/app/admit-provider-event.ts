import type { EventSource } from '../db/events';
import type { FieldIssue } from '../domain/untrusted-json';
import { recordProviderException } from '../db/provider-exceptions';
import type { AdaptedEvent, ProviderName } from '../providers/types';
import { admitPaymentEvent, type IngestOutcome } from './admit-payment-event';
import type { Services } from './services';

export type ProviderOutcome =
  | Exclude<IngestOutcome, { status: 'invalid' }>
  | { status: 'unmatched'; eventId: string }
  /** The adapter could not read the event, or PostgreSQL refused one of its values. */
  | { status: 'invalid'; eventId: string | null; issues: FieldIssue[] };

/**
 * Admits one adapted provider event. A payment event takes the path every event takes
 * (`admitPaymentEvent`: claim, workflow ID, duplicate/conflict, unavailable); an event that names no
 * shipment is recorded once as an `unmatched` exception (so the provider stops retrying); an ignored
 * type writes nothing.
 */
export async function admitProviderEvent(
  deps: Services,
  provider: ProviderName,
  adapted: AdaptedEvent,
  source: EventSource = 'webhook',
): Promise<ProviderOutcome> {
  switch (adapted.kind) {
    case 'payment':
      return admitPaymentEvent(deps, adapted.event, source);
    case 'ignored':
      return { status: 'ignored', eventId: adapted.eventId };
    case 'invalid':
      return {
        status: 'invalid',
        eventId: adapted.eventId,
        issues: [{ path: adapted.path, message: adapted.message }],
      };
    case 'unmatched':
      try {
        await recordProviderException(deps.pool, {
          eventId: adapted.eventId,
          provider,
          providerType: adapted.providerType,
          reason: adapted.reason,
          payload: adapted.payload,
        });
      } catch {
        return { status: 'unavailable', dependency: 'postgres' };
      }
      return { status: 'unmatched', eventId: adapted.eventId };
  }
}

/**
 * Admits a provider's batch (Adyen's notificationItems) item by item, in order. The batch may be
 * acknowledged only once every item is durably admitted (or durably recorded as a repeat, ignored or
 * unmatched): the first item that cannot be admitted stops it, and the provider's retry then finds
 * the items already admitted as duplicates. `counts`: the items by outcome.
 */
export async function admitProviderBatch(
  deps: Services,
  provider: ProviderName,
  batch: readonly AdaptedEvent[],
): Promise<
  | { status: 'admitted'; counts: Record<string, number> }
  | { status: 'unavailable'; dependency: 'temporal' | 'postgres' }
> {
  const counts: Record<string, number> = {};
  for (const adapted of batch) {
    const outcome = await admitProviderEvent(deps, provider, adapted);
    if (outcome.status === 'unavailable') return outcome;
    counts[outcome.status] = (counts[outcome.status] ?? 0) + 1;
  }
  return { status: 'admitted', counts };
}
