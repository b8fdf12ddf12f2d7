import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { startPaymentWorkflow } from './client';
import { findClaim, type ClaimOutcome } from './db/claims';
import { findEvent } from './db/events';
import type { PaymentEvent } from './domain/payment-event';
import type { PaymentWorkflowResult } from './workflows';

export type ReplayResult =
  | { status: 'not_found'; eventId: string }
  | {
      status: 'replayed';
      eventId: string;
      workflowId: string;
      /** The claim's outcome before the replay (null: never reconciled). */
      before: ClaimOutcome | null;
      after: ClaimOutcome;
      /** True when this replay committed an effect; false when the claim made it a no-op. */
      changed: boolean;
    };

/**
 * Pushes one stored event through the same workflow again. The claim decides: an applied event is a
 * no-op, an unmatched one is applied now if its shipment exists. Nothing but this one event moves.
 * When the event's workflow is still running, the replay waits for that run instead of starting one.
 */
export async function replayEvent(
  deps: { pool: pg.Pool; client: Client; taskQueue: string },
  eventId: string,
): Promise<ReplayResult> {
  const stored = await findEvent(deps.pool, eventId);
  if (!stored) return { status: 'not_found', eventId };
  const before = (await findClaim(deps.pool, eventId))?.outcome ?? null;
  const start = await startPaymentWorkflow(deps.client, deps.taskQueue, stored.payload as PaymentEvent, {
    reusePolicy: 'ALLOW_DUPLICATE',
  });
  const handle = deps.client.workflow.getHandle(start.workflowId, start.started ? start.runId : undefined);
  const result = (await handle.result()) as PaymentWorkflowResult;
  return {
    status: 'replayed',
    eventId,
    workflowId: start.workflowId,
    before,
    after: result.outcome,
    changed: before !== result.outcome,
  };
}
