import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { startPaymentWorkflow } from '../client';
import { findEvent, insertEvent, type EventSource } from '../db/events';
import { recordConflict, recordDuplicateDelivery } from '../db/repeats';
import { withTransaction } from '../db/transaction';
import { paymentWorkflowId } from '../domain/ids';
import type { PaymentEvent } from '../domain/payment-event';
import { payloadSha256 } from '../lib/hash';

export type IngestOutcome =
  | { status: 'accepted'; eventId: string; workflowId: string; runId: string }
  | { status: 'duplicate'; eventId: string; workflowId: string }
  | { status: 'conflict'; eventId: string }
  | { status: 'unavailable'; dependency: 'temporal' | 'postgres' };

/**
 * The one path every payment event takes into settle, from the webhook or from `settle import`.
 * The event row commits only after Temporal durably accepted the start, inside one transaction:
 * if the start fails nothing is written and the caller answers 503, so nothing acknowledged is lost.
 * A concurrent delivery of the same ID waits on that row and then sees a duplicate. A repeat is
 * counted on the event (duplicate) or audited in `conflicts` (409); the original is never changed.
 */
export async function ingestPaymentEvent(
  deps: { pool: pg.Pool; client: Client; taskQueue: string },
  event: PaymentEvent,
  source: EventSource = 'webhook',
): Promise<IngestOutcome> {
  const sha = payloadSha256(event);
  const outcome = await admitPaymentEvent(deps, event, sha, source);
  try {
    if (outcome.status === 'duplicate') await recordDuplicateDelivery(deps.pool, event.id);
    if (outcome.status === 'conflict') {
      await recordConflict(deps.pool, {
        eventId: event.id,
        payloadSha256: sha,
        payload: event,
        source,
      });
    }
  } catch {
    // Bookkeeping only: the answer to the provider does not depend on it.
  }
  return outcome;
}

async function admitPaymentEvent(
  deps: { pool: pg.Pool; client: Client; taskQueue: string },
  event: PaymentEvent,
  sha: string,
  source: EventSource,
): Promise<IngestOutcome> {
  const workflowId = paymentWorkflowId(event.id);
  const known = (stored: { payloadSha256: string }): IngestOutcome =>
    stored.payloadSha256 === sha
      ? { status: 'duplicate', eventId: event.id, workflowId }
      : { status: 'conflict', eventId: event.id };

  let stored;
  try {
    stored = await findEvent(deps.pool, event.id);
  } catch {
    return { status: 'unavailable', dependency: 'postgres' };
  }
  if (stored) return known(stored);

  let dependency: 'temporal' | 'postgres' = 'postgres';
  try {
    return await withTransaction(deps.pool, async (tx) => {
      const inserted = await insertEvent(tx, {
        eventId: event.id,
        type: event.type,
        payload: event,
        payloadSha256: sha,
        workflowId,
        source,
      });
      if (!inserted) {
        const winner = await findEvent(tx, event.id);
        return winner ? known(winner) : { status: 'duplicate', eventId: event.id, workflowId };
      }
      dependency = 'temporal';
      const start = await startPaymentWorkflow(deps.client, deps.taskQueue, event);
      dependency = 'postgres';
      // Temporal already knows the ID (its row was purged, or a commit was lost): a duplicate.
      if (!start.started) return { status: 'duplicate', eventId: event.id, workflowId };
      return { status: 'accepted', eventId: event.id, workflowId, runId: start.runId };
    });
  } catch {
    return { status: 'unavailable', dependency };
  }
}
