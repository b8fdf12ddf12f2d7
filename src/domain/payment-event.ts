import { z } from 'zod';
import { parseUntrustedJson, type FieldIssue } from './untrusted-json';
import { EVENT_ID_PATTERN, PAYMENT_EVENT_TYPES, isHandledPaymentType } from './payment-event-shape';

export {
  EVENT_ID_PATTERN,
  PAYMENT_EVENT_TYPES,
  isHandledPaymentType,
  type PaymentEventType,
} from './payment-event-shape';

export const eventIdSchema = z
  .string({ error: 'must be a string' })
  .regex(EVENT_ID_PATTERN, 'must be 1 to 200 characters of [A-Za-z0-9_.:-]');

/** What every event must have before settle decides whether it handles the type at all. */
export const eventEnvelopeSchema = z.looseObject({
  id: eventIdSchema,
  type: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters'),
});

/** A payment event settle acts on. Unknown extra fields are kept, not refused. */
export const paymentEventSchema = z.looseObject({
  id: eventIdSchema,
  type: z.enum(PAYMENT_EVENT_TYPES),
  created_at: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }),
  data: z.looseObject({
    shipment_id: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters'),
    payment_id: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters'),
    amount: z
      .number({ error: 'must be a number' })
      .int('must be an integer in minor units')
      .min(0, 'must be at least 0')
      .max(Number.MAX_SAFE_INTEGER, 'is too large'),
    currency: z.string({ error: 'must be a string' }).regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'),
  }),
});
export type PaymentEvent = z.infer<typeof paymentEventSchema>;

export type { FieldIssue } from './untrusted-json';

export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.map(String).join('.') : '(body)',
    message: issue.message,
  }));
}

/** An event as read from a webhook body or a report line, before settle knows whether it is new. */
export type ReadEvent =
  | { ok: true; event: { id: string; type: string } & Record<string, unknown>; handled: boolean }
  | { ok: false; eventId: string | null; issues: FieldIssue[] };

/**
 * The one reading of an untrusted event, for the webhook and `settle import` alike: the edge rule
 * (storable text, bounded depth), then the envelope (ID and type), then the full schema for a type
 * settle handles. An unhandled type needs only its envelope: its known ID is still checked later.
 */
export function readPaymentEvent(text: string): ReadEvent {
  const json = parseUntrustedJson(text);
  if (!json.ok) return { ok: false, eventId: null, issues: [json.issue] };
  const envelope = eventEnvelopeSchema.safeParse(json.value);
  if (!envelope.success) return { ok: false, eventId: null, issues: fieldIssues(envelope.error) };
  const event = json.value as { id: string; type: string } & Record<string, unknown>;
  if (!isHandledPaymentType(envelope.data.type)) return { ok: true, event, handled: false };
  const parsed = paymentEventSchema.safeParse(json.value);
  if (!parsed.success) return { ok: false, eventId: envelope.data.id, issues: fieldIssues(parsed.error) };
  return { ok: true, event, handled: true };
}

/** `data.amount: must be at least 0; currency: …`: the message of a 400 that names every field. */
export function describeIssues(issues: FieldIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}
