import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ErrorCode } from '../errors';
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
  return reply.code(statusCode).send({
    status: 'rejected',
    error,
    message,
    ...(extra.issues ? { issues: extra.issues } : {}),
  });
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
