import { z } from 'zod';
import { parseUntrustedJson, type FieldIssue } from './untrusted-json';
import { PAYMENT_EVENT_TYPES, isHandledPaymentType } from './payment-event-shape';
import { EVENT_ID_PATTERN, ID_MAX_LENGTH, KEY_RULE, SHIPMENT_ID_RULE } from './ids';
import { isIsoCurrency, NOT_ISO_CURRENCY } from './money';

export {
  EVENT_ID_PATTERN,
  PAYMENT_EVENT_TYPES,
  isHandledPaymentType,
  type PaymentEventType,
} from './payment-event-shape';

export const eventIdSchema = z.string({ error: 'must be a string' }).regex(EVENT_ID_PATTERN, KEY_RULE);

/** Text of 1 to 200 characters (its storability is the edge rule's, checked before any schema). */
const boundedText = () =>
  z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(ID_MAX_LENGTH, `must be at most ${ID_MAX_LENGTH} characters`);

/** The rule of `isShipmentId` (src/domain/ids.ts) as a schema, for the event and the CLI alike. */
export const shipmentIdSchema = boundedText().describe(
  `The merchant's shipment key, matched exactly as sent: ${SHIPMENT_ID_RULE.replace('must be ', '')}.`,
);

/** What every event must have before settle decides whether it handles the type at all. */
export const eventEnvelopeSchema = z.looseObject({
  id: eventIdSchema,
  type: boundedText(),
});

/** A payment event settle acts on. Unknown extra fields are kept, not refused. */
export const paymentEventSchema = z.looseObject({
  id: eventIdSchema,
  type: z.enum(PAYMENT_EVENT_TYPES),
  created_at: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }),
  data: z.looseObject({
    shipment_id: shipmentIdSchema,
    payment_id: boundedText(),
    amount: z
      .number({ error: 'must be a number' })
      .int('must be an integer in minor units')
      .min(0, 'must be at least 0')
      .max(Number.MAX_SAFE_INTEGER, 'is too large')
      .describe('Minor units.'),
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
 * settle handles, and a currency ISO 4217 lists (the schema checks its shape only, as the workflow's
 * own check does). An unhandled type needs only its envelope: its known ID is still checked later.
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
  if (!isIsoCurrency(parsed.data.data.currency)) {
    return {
      ok: false,
      eventId: envelope.data.id,
      issues: [{ path: 'data.currency', message: NOT_ISO_CURRENCY }],
    };
  }
  return { ok: true, event, handled: true };
}

/** `data.amount: must be at least 0; currency: …`: the message of a 400 that names every field. */
export function describeIssues(issues: FieldIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}
