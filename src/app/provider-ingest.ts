import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { EventSource } from '../db/events';
import type { FieldIssue } from '../domain/untrusted-json';
import { recordProviderException } from '../db/provider-exceptions';
import type { AdaptedEvent, ProviderName } from '../providers/types';
import { ingestPaymentEvent, type IngestOutcome } from './ingest';

export type ProviderOutcome =
  | Exclude<IngestOutcome, { status: 'invalid' }>
  | { status: 'unmatched'; eventId: string }
  /** The adapter could not read the event, or PostgreSQL refused one of its values. */
  | { status: 'invalid'; eventId: string | null; issues: FieldIssue[] };

/**
 * Admits one adapted provider event. A payment event takes the path every event takes
 * (`ingestPaymentEvent`: claim, workflow ID, duplicate/conflict, unavailable); an event that names no
 * shipment is recorded once as an `unmatched` exception (so the provider stops retrying); an ignored
 * type writes nothing.
 */
export async function admitProviderEvent(
  deps: { pool: pg.Pool; client: Client; taskQueue: string },
  provider: ProviderName,
  adapted: AdaptedEvent,
  source: EventSource = 'webhook',
): Promise<ProviderOutcome> {
  switch (adapted.kind) {
    case 'payment':
      return ingestPaymentEvent(deps, adapted.event, source);
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
