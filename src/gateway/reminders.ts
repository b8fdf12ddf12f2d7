import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { startReminderWorkflow } from '../temporal/client';
import {
  cancelScheduledReminder,
  findReminder,
  insertReminder,
  listReminderAttempts,
  type Reminder,
} from '../db/reminders';
import { withTransaction } from '../db/transaction';
import { reminderWorkflowId } from '../domain/ids';
import { describeIssues, fieldIssues, type FieldIssue } from '../domain/payment-event';
import { deliveryIdSchema, reminderRequestSchema } from '../domain/reminder';
import { parseUntrustedJson } from '../domain/untrusted-json';
import { classifyDatabaseFailure, ErrorCode } from '../domain/errors';
import { payloadSha256 } from '../lib/hash';
import { assertPublicTarget } from '../lib/target-policy';
import { cancelReminderSignal } from '../workflows/reminder';
import { checkIdHeader, checkIdParam, refuseUnavailable, reject } from './replies';
import { authorized } from './server';

type Deps = {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  apiToken: string | undefined;
  allowPrivateTargets?: boolean;
};

/**
 * Renewal reminders for producers inside the company (bearer token). The `Idempotency-Key` header is
 * the delivery ID: the same key and body again is a 200 duplicate, the same key with another body a
 * 409. Like a payment event, the reminder row commits only once Temporal durably accepted its workflow.
 */
export function registerReminderRoutes(app: FastifyInstance, deps: Deps) {
  app.post('/reminders', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!authorized(request, deps.apiToken)) {
      return reject(reply, 401, ErrorCode.Unauthorized, 'a valid bearer token is required');
    }
    const keyIssue = checkIdHeader(request.headers['idempotency-key'], 'idempotency-key', deliveryIdSchema);
    if (keyIssue) return invalid(reply, [keyIssue]);
    const deliveryId = request.headers['idempotency-key'] as string;
    request.eventId = deliveryId;

    const json = parseUntrustedJson((request.body as Buffer | undefined)?.toString('utf8') ?? '');
    if (!json.ok) return invalid(reply, [json.issue]);
    const body = json.value;
    const parsed = reminderRequestSchema.safeParse(body);
    if (!parsed.success) return invalid(reply, fieldIssues(parsed.error));
    const reminder = parsed.data;
    const sha = payloadSha256(body);
    const workflowId = reminderWorkflowId(deliveryId);

    const known = (stored: Reminder) =>
      stored.requestSha256 === sha
        ? reply.code(200).send({
            status: 'duplicate',
            delivery_id: deliveryId,
            workflow_id: stored.workflowId,
            state: stored.state,
          })
        : reject(
            reply,
            409,
            ErrorCode.IdempotencyKeyReused,
            'this Idempotency-Key was already used with another body; the original reminder stands',
          );

    let stored: Reminder | undefined;
    try {
      stored = await findReminder(deps.pool, deliveryId);
    } catch (error) {
      return databaseFailure(reply, error);
    }
    if (stored) return known(stored);

    if (!deps.allowPrivateTargets) {
      try {
        await assertPublicTarget(new URL(reminder.webhook_url));
      } catch (error) {
        return invalid(reply, [{ path: 'webhook_url', message: (error as Error).message }]);
      }
    }

    // Which dependency the transaction is waiting on, for the answer when it fails.
    const waitingOn: { dependency: 'temporal' | 'postgres' } = { dependency: 'postgres' };
    try {
      const outcome = await withTransaction(deps.pool, async (tx) => {
        const dueAt = new Date(reminder.due_at);
        const inserted = await insertReminder(tx, {
          deliveryId,
          contractId: reminder.contract_id,
          dueAt,
          webhookUrl: reminder.webhook_url,
          payload: reminder.payload ?? null,
          requestSha256: sha,
          workflowId,
        });
        if (!inserted) return { kind: 'known' as const, stored: await findReminder(tx, deliveryId) };
        waitingOn.dependency = 'temporal';
        const start = await startReminderWorkflow(deps.client, deps.taskQueue, {
          deliveryId,
          dueAt,
          contractId: reminder.contract_id,
        });
        waitingOn.dependency = 'postgres';
        return { kind: 'started' as const, start };
      });
      if (outcome.kind === 'known') {
        return outcome.stored ? known(outcome.stored) : refuseUnavailable(reply, 'postgres');
      }
      return reply.code(outcome.start.started ? 202 : 200).send({
        status: outcome.start.started ? 'scheduled' : 'duplicate',
        delivery_id: deliveryId,
        workflow_id: workflowId,
        due_at: new Date(reminder.due_at).toISOString(),
      });
    } catch (error) {
      if (waitingOn.dependency === 'temporal') return refuseUnavailable(reply, 'temporal');
      return databaseFailure(reply, error);
    }
  });

  app.get('/reminders/:deliveryId', async (request, reply) => {
    if (!authorized(request, deps.apiToken)) {
      return reject(reply, 401, ErrorCode.Unauthorized, 'a valid bearer token is required');
    }
    const { deliveryId } = request.params as { deliveryId: string };
    const paramIssue = checkIdParam(deliveryId, 'deliveryId', deliveryIdSchema);
    if (paramIssue) return invalid(reply, [paramIssue]);
    request.eventId = deliveryId;
    const reminder = await findReminder(deps.pool, deliveryId);
    if (!reminder)
      return reject(reply, 404, ErrorCode.NotFound, 'settle has no reminder with this delivery ID');
    return reply.send(await reminderView(deps.pool, reminder));
  });

  app.delete('/reminders/:deliveryId', async (request, reply) => {
    if (!authorized(request, deps.apiToken)) {
      return reject(reply, 401, ErrorCode.Unauthorized, 'a valid bearer token is required');
    }
    const { deliveryId } = request.params as { deliveryId: string };
    const paramIssue = checkIdParam(deliveryId, 'deliveryId', deliveryIdSchema);
    if (paramIssue) return invalid(reply, [paramIssue]);
    request.eventId = deliveryId;
    const cancelled = await cancelScheduledReminder(deps.pool, deliveryId);
    if (cancelled) {
      // The row already says cancelled, and the workflow checks it before delivering: the signal only
      // ends the workflow early, so a lost signal (Temporal briefly down) changes nothing.
      await deps.client.workflow
        .getHandle(cancelled.workflowId)
        .signal(cancelReminderSignal)
        .catch(() => undefined);
      return reply.send({ status: 'cancelled', delivery_id: deliveryId, workflow_id: cancelled.workflowId });
    }
    const reminder = await findReminder(deps.pool, deliveryId);
    if (!reminder)
      return reject(reply, 404, ErrorCode.NotFound, 'settle has no reminder with this delivery ID');
    if (reminder.state === 'cancelled') {
      return reply.send({ status: 'cancelled', delivery_id: deliveryId, workflow_id: reminder.workflowId });
    }
    return reject(
      reply,
      409,
      ErrorCode.ReminderNotCancellable,
      `the reminder is already ${reminder.state}; only a scheduled reminder can be cancelled`,
    );
  });
}

/** The JSON of GET /reminders/<id>: the delivery record and every attempt. */
export async function reminderView(pool: pg.Pool, reminder: Reminder) {
  const attempts = await listReminderAttempts(pool, reminder.deliveryId);
  return {
    delivery_id: reminder.deliveryId,
    contract_id: reminder.contractId,
    workflow_id: reminder.workflowId,
    status: reminder.state,
    due_at: reminder.dueAt.toISOString(),
    webhook_url: reminder.webhookUrl,
    lease_expires_at: reminder.leaseExpiresAt?.toISOString() ?? null,
    last_error: reminder.lastError,
    created_at: reminder.createdAt.toISOString(),
    completed_at: reminder.completedAt?.toISOString() ?? null,
    attempt_count: reminder.attempts,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.startedAt.toISOString(),
      lease_expires_at: attempt.leaseExpiresAt.toISOString(),
      finished_at: attempt.finishedAt?.toISOString() ?? null,
      status_code: attempt.statusCode,
      error: attempt.error,
    })),
  };
}

function invalid(reply: FastifyReply, issues: FieldIssue[]) {
  return reject(reply, 400, ErrorCode.InvalidReminder, describeIssues(issues), { issues });
}

/** A 503 only when PostgreSQL is really unavailable; a value it refused is the request's fault. */
function databaseFailure(reply: FastifyReply, error: unknown) {
  const kind = classifyDatabaseFailure(error);
  if (kind === 'bug') throw error;
  if (kind === 'invalid_data') {
    return invalid(reply, [{ path: '(body)', message: 'holds a value PostgreSQL cannot store' }]);
  }
  return refuseUnavailable(reply, 'postgres');
}
