import type { EventSource } from '../db/events';
import type { FieldIssue } from '../domain/untrusted-json';
import { findCapturedShipment } from '../db/claims';
import { recordProviderException } from '../db/provider-exceptions';
import { takeTransmission } from '../db/transmissions';
import { sha256Hex } from '../lib/hash';
import type { AdaptedEvent } from '../providers/types';
import { admitPaymentEvent, refusedByDatabase, type IngestOutcome } from './admit-payment-event';
import type { Services } from './services';

export type ProviderOutcome =
  | Exclude<IngestOutcome, { status: 'invalid' }>
  | { status: 'unmatched'; eventId: string }
  /** The adapter could not read the event, or PostgreSQL refused one of its values. */
  | { status: 'invalid'; eventId: string | null; issues: FieldIssue[] };

/**
 * Admits one adapted provider event. A payment event takes the path every event takes
 * (`admitPaymentEvent`: claim, workflow ID, duplicate/conflict, unavailable); an event that names no
 * shipment but its payment takes the shipment of that payment's recorded capture; one that still has
 * none is recorded once as an `unmatched` exception (so the provider stops retrying); an ignored
 * type writes nothing.
 */
export async function admitProviderEvent(
  deps: Services,
  provider: string,
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
    case 'unmatched': {
      const byPayment = adapted.byPayment;
      let shipmentId: string | undefined;
      try {
        if (byPayment) {
          shipmentId = await findCapturedShipment(deps.pool, byPayment.paymentId, byPayment.eventIdPrefix);
        }
      } catch {
        return { status: 'unavailable', dependency: 'postgres' };
      }
      // Read again naming the shipment: every later delivery of the event finds the same one.
      if (byPayment && shipmentId !== undefined) {
        return admitProviderEvent(deps, provider, byPayment.withShipment(shipmentId), source);
      }
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
}

/**
 * Admits a provider's batch (Adyen's notificationItems) item by item, in order. The batch may be
 * acknowledged only once every item is durably admitted (or durably recorded as a repeat, ignored or
 * unmatched): the first item that cannot be admitted stops it, and the provider's retry then finds
 * the items already admitted as duplicates. `counts`: the items by outcome.
 */
export async function admitProviderBatch(
  deps: Services,
  provider: string,
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

/**
 * Takes a signed delivery's transmission ID once, with the SHA-256 of its raw body, before anything of
 * it is admitted (and whatever it is answered: the signature is spent on that body). `taken`: first
 * seen, or seen with the same body (the delivery again); `reused`: seen with another body, which the
 * signature cannot tell apart (one that covers only a checksum of it); `unavailable`: PostgreSQL is down.
 */
export async function takeProviderTransmission(
  deps: Pick<Services, 'pool'>,
  provider: string,
  transmission: { id: string; header: string },
  rawBody: string,
): Promise<
  | { status: 'taken' | 'reused'; bodySha256: string }
  | { status: 'invalid'; issues: FieldIssue[] }
  | { status: 'unavailable'; dependency: 'postgres' }
> {
  const bodySha256 = sha256Hex(rawBody);
  try {
    const taken = await takeTransmission(deps.pool, {
      provider,
      transmissionId: transmission.id,
      bodySha256,
    });
    return { status: taken === 'other' ? 'reused' : 'taken', bodySha256 };
  } catch (error) {
    const refusal = refusedByDatabase(error);
    return refusal.status === 'invalid'
      ? {
          status: 'invalid',
          issues: [{ path: `headers.${transmission.header}`, message: 'cannot be stored' }],
        }
      : refusal;
  }
}
