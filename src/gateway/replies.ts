import type { FastifyReply } from 'fastify';
import type { ErrorCode } from '../errors';
import type { FieldIssue } from '../domain/payment-event';

/** Every refusal has the same shape: `status`, a stable `error` code and a human `message`. */
export function reject(
  reply: FastifyReply,
  statusCode: number,
  error: ErrorCode,
  message: string,
  extra: { issues?: FieldIssue[]; retryAfterSeconds?: number } = {},
) {
  if (extra.retryAfterSeconds !== undefined) reply.header('retry-after', String(extra.retryAfterSeconds));
  return reply.code(statusCode).send({
    status: 'rejected',
    error,
    message,
    ...(extra.issues ? { issues: extra.issues } : {}),
  });
}
