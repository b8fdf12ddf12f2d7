import type { ReminderCancelled, ReminderDuplicate, ReminderScheduled } from '../domain/api-contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admitReminder, cancelReminder, viewReminder } from '../app/reminders';
import { describeIssues, fieldIssues, type FieldIssue } from '../domain/payment-event';
import { deliveryIdSchema, reminderRequestSchema } from '../domain/reminder';
import { parseUntrustedJson } from '../domain/untrusted-json';
import { ErrorCode } from '../domain/errors';
import { checkIdHeader, checkIdParam, refuseUnavailable, reject } from './replies';
import type { Services } from '../app/services';

type Deps = Services & { allowPrivateTargets?: boolean };

/**
 * Renewal reminders for producers inside the company (bearer token). The `Idempotency-Key` header is
 * the delivery ID: the same key and body again is a 200 duplicate, the same key with another body a
 * 409. The admission itself is src/app/reminders.ts.
 */
export function registerReminderRoutes(app: FastifyInstance, deps: Deps) {
  const config = { bearerToken: true };

  app.post('/reminders', { config }, async (request: FastifyRequest, reply: FastifyReply) => {
    const keyIssue = checkIdHeader(request.headers['idempotency-key'], 'idempotency-key', deliveryIdSchema);
    if (keyIssue) return invalid(reply, [keyIssue]);
    const deliveryId = request.headers['idempotency-key'] as string;
    request.eventId = deliveryId;

    const json = parseUntrustedJson((request.body as Buffer | undefined)?.toString('utf8') ?? '');
    if (!json.ok) return invalid(reply, [json.issue]);
    const parsed = reminderRequestSchema.safeParse(json.value);
    if (!parsed.success) return invalid(reply, fieldIssues(parsed.error));

    const outcome = await admitReminder(deps, deliveryId, json.value, parsed.data);
    switch (outcome.status) {
      case 'started':
        return reply.code(outcome.started ? 202 : 200).send({
          status: outcome.started ? 'scheduled' : 'duplicate',
          delivery_id: deliveryId,
          workflow_id: outcome.workflowId,
          due_at: outcome.dueAt.toISOString(),
        } satisfies ReminderScheduled);
      case 'known':
        return reply.code(200).send({
          status: 'duplicate',
          delivery_id: deliveryId,
          workflow_id: outcome.reminder.workflowId,
          state: outcome.reminder.state,
        } satisfies ReminderDuplicate);
      case 'conflict':
        return reject(
          reply,
          409,
          ErrorCode.IdempotencyKeyReused,
          'this Idempotency-Key was already used with another body; the original reminder stands',
        );
      case 'invalid':
        return invalid(reply, outcome.issues);
      case 'unavailable':
        return refuseUnavailable(reply, outcome.dependency);
    }
  });

  app.get('/reminders/:deliveryId', { config }, async (request, reply) => {
    const deliveryId = deliveryIdParam(request, reply);
    if (deliveryId === undefined) return reply;
    const view = await viewReminder(deps.pool, deliveryId);
    if (!view) return reject(reply, 404, ErrorCode.NotFound, 'settle has no reminder with this delivery ID');
    return reply.send(view);
  });

  app.delete('/reminders/:deliveryId', { config }, async (request, reply) => {
    const deliveryId = deliveryIdParam(request, reply);
    if (deliveryId === undefined) return reply;
    const cancellation = await cancelReminder(deps, deliveryId);
    switch (cancellation.status) {
      case 'cancelled':
        return reply.send({
          status: 'cancelled',
          delivery_id: deliveryId,
          workflow_id: cancellation.workflowId,
        } satisfies ReminderCancelled);
      case 'not_found':
        return reject(reply, 404, ErrorCode.NotFound, 'settle has no reminder with this delivery ID');
      case 'not_cancellable':
        return reject(
          reply,
          409,
          ErrorCode.ReminderNotCancellable,
          `the reminder is already ${cancellation.state}; only a scheduled reminder can be cancelled`,
        );
    }
  });
}

/** The `:deliveryId` of the URL, or undefined once a 400 naming it was sent. */
function deliveryIdParam(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const { deliveryId } = request.params as { deliveryId: string };
  const paramIssue = checkIdParam(deliveryId, 'deliveryId', deliveryIdSchema);
  if (paramIssue) {
    invalid(reply, [paramIssue]);
    return undefined;
  }
  request.eventId = deliveryId;
  return deliveryId;
}

function invalid(reply: FastifyReply, issues: FieldIssue[]) {
  return reject(reply, 400, ErrorCode.InvalidReminder, describeIssues(issues), { issues });
}
