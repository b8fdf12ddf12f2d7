/**
 * The ID rules, each declared once, and the one place workflow IDs are derived (downstream
 * idempotency keys: src/domain/outbox.ts). Plain code: the workflow bundle, the zod schemas, the
 * CLI, the log redaction and the OpenAPI document all read these.
 */

/** The alphabet of the keys that appear in workflow IDs, URLs and logs: event and delivery IDs. */
const KEY_ALPHABET = 'A-Za-z0-9_.:-';
/** Every ID and every bounded text field of an event: at most this many characters. */
export const ID_MAX_LENGTH = 200;

/** The provider's event ID is the idempotency key: 1 to 200 characters of [A-Za-z0-9_.:-]. */
export const EVENT_ID_PATTERN = new RegExp(`^[${KEY_ALPHABET}]{1,${ID_MAX_LENGTH}}$`);
/** What a refused event ID or delivery ID is told (a 400's `issues[].message`). */
export const KEY_RULE = `must be 1 to ${ID_MAX_LENGTH} characters of [${KEY_ALPHABET}]`;

export function isEventId(value: unknown): value is string {
  return typeof value === 'string' && EVENT_ID_PATTERN.test(value);
}

/** A reminder's delivery ID (the producer's `Idempotency-Key`) follows the event ID's rule. */
export const DELIVERY_ID_PATTERN = EVENT_ID_PATTERN;
export const isDeliveryId = isEventId;

/**
 * A shipment ID is the merchant's own key, matched exactly as the event names it: any 1 to 200
 * characters (text PostgreSQL can store, the edge rule of untrusted-json.ts). The same rule for an
 * event's `data.shipment_id` and for `settle shipments add` / `import`.
 */
export function isShipmentId(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= ID_MAX_LENGTH;
}
export const SHIPMENT_ID_RULE = `must be 1 to ${ID_MAX_LENGTH} characters`;

/** A workflow ID anywhere in a line of text; group 1 is its kind, group 2 the key it stands for. */
export const WORKFLOW_ID_IN_TEXT = new RegExp(`\\b(payment|reminder):([${KEY_ALPHABET}]+)`, 'g');

export function paymentWorkflowId(eventId: string): string {
  return `payment:${eventId}`;
}

export function reminderWorkflowId(deliveryId: string): string {
  return `reminder:${deliveryId}`;
}

/**
 * The event or reminder delivery a workflow ID stands for (the inverse of the two above), so that an
 * activity's logs can name it from the workflow it runs for; undefined for any other workflow (the purge).
 */
export function subjectOfWorkflowId(workflowId: string): string | undefined {
  const match = /^(?:payment|reminder):(.+)$/.exec(workflowId);
  return match?.[1];
}
