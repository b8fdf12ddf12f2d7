import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admitPaymentEvent } from '../app/admit-payment-event';
import { describeIssues, readPaymentEvent, type FieldIssue } from '../domain/payment-event';
import { ErrorCode } from '../domain/errors';
import { answerAdmission, reject } from './replies';
import { createSignatureVerifier } from '../lib/webhook-signature';
import type { Services } from '../app/services';

type Deps = Services & { webhookSecrets: string[] };

export function registerPaymentRoutes(app: FastifyInstance, deps: Deps) {
  const verifySignature = createSignatureVerifier(deps.webhookSecrets);

  app.post('/webhooks/payments', async (request: FastifyRequest, reply: FastifyReply) => {
    const rawBody = (request.body as Buffer | undefined)?.toString('utf8') ?? '';
    const signature = verifySignature(rawBody, request.headers);
    if (!signature.ok) {
      return reject(reply, 401, ErrorCode.InvalidSignature, `webhook signature refused: ${signature.reason}`);
    }

    const read = readPaymentEvent(rawBody);
    if (!read.ok) return invalidEvent(reply, read.issues);
    request.eventId = read.event.id;

    // The stored and hashed payload is the body as sent, unknown fields included.
    const outcome = await admitPaymentEvent(deps, read.event);
    request.ingestOutcome = outcome.status;
    return answerAdmission(reply, outcome);
  });
}

function invalidEvent(reply: FastifyReply, issues: FieldIssue[]) {
  return reject(reply, 400, ErrorCode.InvalidEvent, describeIssues(issues), { issues });
}
