import type { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { findClaim, listLedgerForShipment } from '../db/claims';
import { findEvent } from '../db/events';
import { listOutboxForEvent } from '../db/outbox';
import { findShipment } from '../db/shipments';
import { findStartOutcomeUnknown } from '../db/start-outcomes';
import type { EventInspection } from '../domain/api-contract';
import { paymentWorkflowId } from '../domain/ids';
import { classifyTemporalError } from '../temporal/connection';
import { runVersion } from '../temporal/worker-versioning';

/** The JSON of `GET /events/<id>` and `settle inspect <id> --json` (its schema: src/domain/api-contract.ts). */
export type { EventInspection } from '../domain/api-contract';

/**
 * Everything known about one event, from PostgreSQL and Temporal; undefined when settle never saw it.
 * `client` may still be connecting (`settle inspect`): the database part runs meanwhile.
 */
export async function inspectEvent(
  pool: pg.Pool,
  client: Client | undefined | Promise<Client | undefined>,
  eventId: string,
): Promise<EventInspection | undefined> {
  const [event, claim] = await Promise.all([findEvent(pool, eventId), findClaim(pool, eventId)]);
  if (!event && !claim) return undefined;

  const payload = event?.payload as { data?: { shipment_id?: string } } | undefined;
  const shipmentId = claim?.shipmentId ?? payload?.data?.shipment_id;
  const [shipment, ledger, deliveries, workflow, unknownStart] = await Promise.all([
    shipmentId ? findShipment(pool, shipmentId) : undefined,
    shipmentId ? listLedgerForShipment(pool, shipmentId) : [],
    listOutboxForEvent(pool, eventId),
    describeWorkflow(client, pool, paymentWorkflowId(eventId)),
    findStartOutcomeUnknown(pool, eventId),
  ]);

  return {
    event_id: eventId,
    type: event?.type ?? null,
    workflow_id: paymentWorkflowId(eventId),
    payload_sha256: event ? event.payloadSha256 : claim!.payloadSha256,
    received_at: event?.receivedAt.toISOString() ?? null,
    outcome: claim?.outcome ?? null,
    claimed_at: claim?.claimedAt.toISOString() ?? null,
    workflow: workflow.workflow,
    ...(workflow.error ? { workflow_error: workflow.error } : {}),
    ...(workflow.message ? { workflow_error_message: workflow.message } : {}),
    ...(unknownStart ? { start_outcome_unknown_at: unknownStart.lastAt.toISOString() } : {}),
    shipment: shipment
      ? {
          shipment_id: shipment.shipmentId,
          payment_status: shipment.paymentStatus,
          hold_status: shipment.holdStatus,
        }
      : null,
    missing_shipment_id: !shipment && shipmentId ? shipmentId : null,
    ledger: ledger.map((entry) => ({
      entry_id: entry.entryId,
      kind: entry.kind,
      amount: entry.amount,
      currency: entry.currency,
      event_id: entry.eventId,
    })),
    deliveries: deliveries.map((row) => ({
      target: row.target,
      action: row.action,
      status: row.status,
      attempts: row.attempts,
      idempotency_key: row.idempotencyKey,
      last_error: row.lastError,
    })),
  };
}

async function describeWorkflow(
  connecting: Client | undefined | Promise<Client | undefined>,
  pool: pg.Pool,
  workflowId: string,
): Promise<{ workflow: EventInspection['workflow']; error?: string; message?: string }> {
  const client = await connecting;
  if (!client) return { workflow: null, error: 'temporal_not_configured' };
  try {
    // Settle's own run, read raw: a run someone else started under the ID is not the event's, and a
    // memo no codec can read changes nothing here (src/client.ts, describeSettleRun).
    const { describeSettleRun } = await import('../client.js');
    const run = await describeSettleRun(client, pool, workflowId, 3_000);
    if (!run) return { workflow: null };
    return {
      workflow: {
        status: run.status,
        run_id: run.runId,
        ...runVersion(run.versioningInfo ?? undefined),
      },
    };
  } catch (error) {
    // The SDK's error classes only here: the client (and so the SDK) is loaded by then, and the
    // module stays free of it until a client is given.
    const { ServiceError, WorkflowNotFoundError } = await import('@temporalio/client');
    // Temporal answers NotFound for a missing namespace too; the SDK calls both WorkflowNotFoundError.
    if (error instanceof WorkflowNotFoundError && !/namespace/i.test(error.message))
      return { workflow: null };
    const problem = classifyTemporalError(error instanceof ServiceError ? (error.cause ?? error) : error, {
      namespace: client.options.namespace,
      connection: (client.connection as Connection).options.address,
    });
    return problem.code === 'unreachable'
      ? { workflow: null, error: 'temporal_unavailable' }
      : { workflow: null, error: `temporal_${problem.code}`, message: problem.message };
  }
}
