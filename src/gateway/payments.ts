import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { startPaymentWorkflow } from '../client';
import { findEvent, insertEvent, type EventSource } from '../db/events';
import { recordConflict, recordDuplicateDelivery } from '../db/repeats';
import { recordStartOutcomeUnknown } from '../db/start-outcomes';
import { startOutcomeUnknownTotal } from '../metrics/settle-metrics';
import { withTransaction } from '../db/transaction';
import { paymentWorkflowId } from '../domain/ids';
import {
  eventEnvelopeSchema,
  fieldIssues,
  isHandledPaymentType,
  paymentEventSchema,
  type PaymentEvent,
} from '../domain/payment-event';
import { ErrorCode } from '../errors';
import { payloadSha256 } from '../lib/hash';
import { reject } from './replies';
import { createSignatureVerifier } from './signature';

/** What the provider is told to wait before retrying when a dependency is down. */
const RETRY_AFTER_SECONDS = 5;

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
  let startError: unknown;
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
      const start = await startPaymentWorkflow(deps.client, deps.taskQueue, event).catch((error: unknown) => {
        startError = error;
        throw error;
      });
      dependency = 'postgres';
      // Temporal already knows the ID (its row was purged, or a commit was lost): a duplicate.
      if (!start.started) return { status: 'duplicate', eventId: event.id, workflowId };
      return { status: 'accepted', eventId: event.id, workflowId, runId: start.runId };
    });
  } catch {
    if (startError !== undefined && startOutcomeUnknown(startError)) {
      // Answered 503 all the same (nothing acknowledged); recorded so the retry's `duplicate` is explained.
      startOutcomeUnknownTotal.inc();
      await recordStartOutcomeUnknown(deps.pool, { eventId: event.id, workflowId }).catch(() => {});
    }
    return { status: 'unavailable', dependency };
  }
}

const GRPC_CANCELLED = 1;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/**
 * A start that may have been made durable although settle never heard back: the deadline passed, or
 * the connection broke after the request went out. Temporal refusing before (no connection at all)
 * is a start known not to have happened.
 */
function startOutcomeUnknown(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const code = (cause as { code?: unknown }).code;
  if (code === GRPC_DEADLINE_EXCEEDED || code === GRPC_CANCELLED) return true;
  const details = cause instanceof Error ? cause.message : String(cause);
  return code === GRPC_UNAVAILABLE && !/No connection established|ECONNREFUSED|connect/i.test(details);
}

type Deps = { pool: pg.Pool; client: Client; taskQueue: string; webhookSecrets: string[] };

export function registerPaymentRoutes(app: FastifyInstance, deps: Deps) {
  const verifySignature = createSignatureVerifier(deps.webhookSecrets);

  app.post('/webhooks/payments', async (request: FastifyRequest, reply: FastifyReply) => {
    const rawBody = (request.body as Buffer | undefined)?.toString('utf8') ?? '';
    const signature = verifySignature(rawBody, request.headers);
    if (!signature.ok) {
      return reject(reply, 401, ErrorCode.InvalidSignature, `webhook signature refused: ${signature.reason}`);
    }

    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      return reject(reply, 400, ErrorCode.InvalidEvent, 'body is not valid JSON');
    }
    const envelope = eventEnvelopeSchema.safeParse(body);
    if (!envelope.success) {
      const issues = fieldIssues(envelope.error);
      return reject(reply, 400, ErrorCode.InvalidEvent, describeIssues(issues), { issues });
    }
    request.eventId = envelope.data.id;
    if (!isHandledPaymentType(envelope.data.type)) {
      request.ingestOutcome = 'ignored';
      return reply.code(200).send({ status: 'ignored', event_id: envelope.data.id });
    }
    const parsed = paymentEventSchema.safeParse(body);
    if (!parsed.success) {
      const issues = fieldIssues(parsed.error);
      return reject(reply, 400, ErrorCode.InvalidEvent, describeIssues(issues), { issues });
    }

    // The stored and hashed payload is the body as sent, unknown fields included.
    const outcome = await ingestPaymentEvent(deps, body as PaymentEvent);
    request.ingestOutcome = outcome.status;
    switch (outcome.status) {
      case 'accepted':
        return reply.code(202).send({
          status: 'accepted',
          event_id: outcome.eventId,
          workflow_id: outcome.workflowId,
          run_id: outcome.runId,
        });
      case 'duplicate':
        return reply
          .code(200)
          .send({ status: 'duplicate', event_id: outcome.eventId, workflow_id: outcome.workflowId });
      case 'conflict':
        return reject(
          reply,
          409,
          ErrorCode.IdempotencyKeyReused,
          'this event ID was already delivered with a different payload; the original effect stands',
        );
      case 'unavailable':
        return outcome.dependency === 'temporal'
          ? reject(reply, 503, ErrorCode.TemporalUnavailable, 'Temporal is unreachable; retry later', {
              retryAfterSeconds: RETRY_AFTER_SECONDS,
            })
          : reject(reply, 503, ErrorCode.DatabaseUnavailable, 'PostgreSQL is unreachable; retry later', {
              retryAfterSeconds: RETRY_AFTER_SECONDS,
            });
    }
  });
}

function describeIssues(issues: { path: string; message: string }[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}
