import { z } from 'zod';
import { DELIVERY_ID_PATTERN, ID_MAX_LENGTH, KEY_RULE } from './ids';

/** The producer's Idempotency-Key is the delivery ID: the same alphabet and length as an event ID. */
export const deliveryIdSchema = z.string({ error: 'is required' }).regex(DELIVERY_ID_PATTERN, KEY_RULE);

/** Any JSON value (a reminder's `payload`, delivered as sent); its own component in the OpenAPI document. */
export const jsonValueSchema = z.json();

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
const WEBHOOK_URL_PATTERN = `^https?://${HOST_PATTERN}(:${PORT_PATTERN})?(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*(\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$`;

const WEBHOOK_URL = new RegExp(WEBHOOK_URL_PATTERN);
const WEBHOOK_URL_RULE = 'must be an http(s) URL to a host name or IPv4 address, without credentials';

/** The body of POST /reminders. Unknown extra fields are refused: a producer's typo must not pass. */
export const reminderRequestSchema = z.strictObject({
  contract_id: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(ID_MAX_LENGTH, `must be at most ${ID_MAX_LENGTH} characters`),
  due_at: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }),
  webhook_url: z
    .string({ error: 'must be a string' })
    .max(2048, 'is too long')
    // The pattern is a check of its own so that the OpenAPI document publishes it; a URL it refuses
    // gets this one issue, as one the URL parser then refuses does.
    .regex(WEBHOOK_URL, { error: WEBHOOK_URL_RULE, abort: true })
    .refine((value) => {
      try {
        const url = new URL(value);
        return !url.username && !url.password;
      } catch {
        return false;
      }
    }, WEBHOOK_URL_RULE)
    .describe('http(s), no credentials, no IPv6 literal (reach an IPv6 target through its name).'),
  payload: jsonValueSchema.optional().describe('Optional; delivered as sent.'),
});
export type ReminderRequest = z.infer<typeof reminderRequestSchema>;
