import { z } from 'zod';

/** The provider's event ID is the idempotency key: 1 to 200 characters of [A-Za-z0-9_.:-]. */
export const EVENT_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;

export const PAYMENT_EVENT_TYPES = [
  'payment.authorized',
  'payment.captured',
  'payment.settled',
  'payment.refunded',
  'payment.failed',
] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

export const eventIdSchema = z
  .string({ error: 'must be a string' })
  .regex(EVENT_ID_PATTERN, 'must be 1 to 200 characters of [A-Za-z0-9_.:-]');

/** What every event must have before settle decides whether it handles the type at all. */
export const eventEnvelopeSchema = z.looseObject({
  id: eventIdSchema,
  type: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200),
});

/** A payment event settle acts on. Unknown extra fields are kept, not refused. */
export const paymentEventSchema = z.looseObject({
  id: eventIdSchema,
  type: z.enum(PAYMENT_EVENT_TYPES),
  created_at: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }),
  data: z.looseObject({
    shipment_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200),
    payment_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200),
    amount: z
      .number({ error: 'must be a number' })
      .int('must be an integer in minor units')
      .min(0, 'must be at least 0')
      .max(Number.MAX_SAFE_INTEGER, 'is too large'),
    currency: z.string({ error: 'must be a string' }).regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'),
  }),
});
export type PaymentEvent = z.infer<typeof paymentEventSchema>;

export function isHandledPaymentType(type: string): type is PaymentEventType {
  return (PAYMENT_EVENT_TYPES as readonly string[]).includes(type);
}

/** One field problem, as the API reports it: `data.amount: must be at least 0`. */
export type FieldIssue = { path: string; message: string };

export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.map(String).join('.') : '(body)',
    message: issue.message,
  }));
}
