import { z } from 'zod';
import { EVENT_ID_PATTERN } from './payment-event';

/** The producer's Idempotency-Key is the delivery ID: the same alphabet and length as an event ID. */
export const deliveryIdSchema = z
  .string({ error: 'is required' })
  .regex(EVENT_ID_PATTERN, 'must be 1 to 200 characters of [A-Za-z0-9_.:-]');

// A name's last label is not numeric: the URL parser would read it as an IPv4 address. No
// punycode labels (xn--): not every one is valid.
const HOST_PATTERN = `(((?![Xx][Nn]--)[A-Za-z0-9-]+\\.)*(?![Xx][Nn]--)[A-Za-z-][A-Za-z0-9-]*|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))`;
/**
 * An http(s) URL to a host name or an IPv4 address, an optional port, path and query, nothing else
 * (no credentials, no fragment, no IPv6 literal: an IPv6 target is reached through its name). The
 * OpenAPI document publishes this same pattern.
 */
/** 0 to 65535: a larger port is not a URL at all. */
const PORT_PATTERN = '(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})';
export const WEBHOOK_URL_PATTERN = `^https?://${HOST_PATTERN}(:${PORT_PATTERN})?(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*(\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$`;

const WEBHOOK_URL = new RegExp(WEBHOOK_URL_PATTERN);

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
      if (!WEBHOOK_URL.test(value)) return false;
      try {
        const url = new URL(value);
        return !url.username && !url.password;
      } catch {
        return false;
      }
    }, 'must be an http(s) URL to a host name or IPv4 address, without credentials'),
  payload: z.json().optional(),
});
export type ReminderRequest = z.infer<typeof reminderRequestSchema>;
