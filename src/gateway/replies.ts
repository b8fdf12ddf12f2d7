import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Accepted, Duplicate, Ignored, Rejected } from '../domain/api-contract';
import type { z } from 'zod';
import { ErrorCode } from '../domain/errors';
import { describeIssues } from '../domain/payment-event';
import { unstorableText, type FieldIssue } from '../domain/untrusted-json';

/** Every refusal has the same shape: `status`, a stable `error` code and a human `message`. */
export function reject(
  reply: FastifyReply,
  statusCode: number,
  error: ErrorCode,
  message: string,
  extra: { issues?: FieldIssue[]; retryAfterSeconds?: number } = {},
) {
  if (extra.retryAfterSeconds !== undefined) reply.header('retry-after', String(extra.retryAfterSeconds));
  // Counted by settle_webhooks_total{error} (operations.ts); never logged with an ID.
  reply.request.refusalCode = error;
  return reply.code(statusCode).send({
    status: 'rejected',
    error,
    message,
    ...(extra.issues ? { issues: extra.issues } : {}),
  } satisfies Rejected);
}

/**
 * A path parameter naming an ID: storable text first (the edge rule), then the ID's own schema.
 * The issue never repeats the value, so a refusal cannot echo an ID.
 */
export function checkIdParam(value: string, name: string, schema: z.ZodType): FieldIssue | undefined {
  return checkId(value, `params.${name}`, schema);
}

/** The same for a header carrying an ID (Idempotency-Key); a missing header is `is required`. */
export function checkIdHeader(
  value: string | string[] | undefined,
  name: string,
  schema: z.ZodType,
): FieldIssue | undefined {
  if (Array.isArray(value)) return { path: `headers.${name}`, message: 'must be sent once' };
  return checkId(value, `headers.${name}`, schema);
}

function checkId(value: string | undefined, path: string, schema: z.ZodType): FieldIssue | undefined {
  const unstorable = value === undefined ? undefined : unstorableText(value);
  if (unstorable) return { path, message: unstorable };
  const parsed = schema.safeParse(value);
  return parsed.success ? undefined : { path, message: parsed.error.issues[0]!.message };
}

/** Every other method on a known path is a 405 with `Allow` (HEAD comes with GET). */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: string[]) {
  const served = allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed;
  const others = app.supportedMethods.filter((method) => !served.includes(method));
  app.route({
    method: others,
    url,
    handler: (_request: FastifyRequest, reply: FastifyReply) => {
      reply.header('allow', allowed.join(', '));
      return reject(reply, 405, ErrorCode.MethodNotAllowed, `use ${allowed.join(' or ')}`);
    },
  });
}

/** What a provider or producer is told to wait before retrying when a dependency is down. */
const RETRY_AFTER_SECONDS = 5;

/**
 * The one 503: a dependency down, or no PostgreSQL connection free within SETTLE_ADMISSION_WAIT, with
 * Retry-After; nothing was acknowledged.
 */
export function refuseUnavailable(reply: FastifyReply, dependency: 'temporal' | 'postgres') {
  return dependency === 'temporal'
    ? reject(reply, 503, ErrorCode.TemporalUnavailable, 'Temporal is unreachable; retry later', {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      })
    : reject(reply, 503, ErrorCode.DatabaseUnavailable, 'PostgreSQL is unreachable or busy; retry later', {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      });
}

/** What admission decided, as every payment route answers it (Standard Webhooks, Stripe, Adyen items). */
export type AdmissionAnswer =
  | { status: 'accepted'; eventId: string; workflowId: string; runId: string }
  | { status: 'duplicate'; eventId: string; workflowId: string }
  | { status: 'ignored'; eventId: string }
  | { status: 'conflict'; eventId: string }
  | { status: 'invalid'; issues: FieldIssue[] }
  | { status: 'unavailable'; dependency: 'temporal' | 'postgres' };

/** 202 accepted, 200 duplicate or ignored, 409, 400 with the field paths, or 503 with Retry-After. */
export function answerAdmission(reply: FastifyReply, outcome: AdmissionAnswer) {
  switch (outcome.status) {
    case 'accepted':
      return reply.code(202).send({
        status: 'accepted',
        event_id: outcome.eventId,
        workflow_id: outcome.workflowId,
        run_id: outcome.runId,
      } satisfies Accepted);
    case 'duplicate':
      return reply.code(200).send({
        status: 'duplicate',
        event_id: outcome.eventId,
        workflow_id: outcome.workflowId,
      } satisfies Duplicate);
    case 'ignored':
      return reply.code(200).send({ status: 'ignored', event_id: outcome.eventId } satisfies Ignored);
    case 'conflict':
      return reject(
        reply,
        409,
        ErrorCode.IdempotencyKeyReused,
        'this event ID was already delivered with a different payload; the original effect stands',
      );
    case 'invalid':
      return reject(reply, 400, ErrorCode.InvalidEvent, describeIssues(outcome.issues), {
        issues: outcome.issues,
      });
    case 'unavailable':
      return refuseUnavailable(reply, outcome.dependency);
  }
}
