import { z } from 'zod';
import { EVENT_ID_PATTERN } from './payment-event';

/** The producer's Idempotency-Key is the delivery ID: the same alphabet and length as an event ID. */
export const deliveryIdSchema = z
  .string({ error: 'is required' })
  .regex(EVENT_ID_PATTERN, 'must be 1 to 200 characters of [A-Za-z0-9_.:-]');

/** The body of POST /reminders. Unknown extra fields are refused: a producer's typo must not pass. */
export const reminderRequestSchema = z.strictObject({
  contract_id: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters'),
  due_at: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }),
  webhook_url: z
    .string({ error: 'must be a string' })
    .max(2048, 'is too long')
    .refine((value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password;
      } catch {
        return false;
      }
    }, 'must be an http(s) URL without credentials'),
  payload: z.json().optional(),
});
export type ReminderRequest = z.infer<typeof reminderRequestSchema>;
