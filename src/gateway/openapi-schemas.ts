import { z } from 'zod';
import * as api from '../domain/api-contract';
import { ID_MAX_LENGTH } from '../domain/ids';
import { eventEnvelopeSchema, paymentEventSchema } from '../domain/payment-event';
import { jsonValueSchema, reminderRequestSchema } from '../domain/reminder';

/**
 * The OpenAPI document's schemas, generated from the zod schemas with zod's JSON Schema output
 * (draft 2020-12, the dialect of OpenAPI 3.1). Requests are described as zod reads them (`io:
 * input`), replies as the gateway writes them (`io: output`: an object lists every field it has).
 */

/** Text PostgreSQL can store (the edge rule of untrusted-json.ts, checked before any schema). */
const STORABLE = '^[^\\u0000]*$';

type JsonSchema = Record<string, unknown>;

const requests = z.registry<{ id: string }>();
requests.add(paymentEventSchema, { id: 'PaymentEvent' });
requests.add(eventEnvelopeSchema, { id: 'EventEnvelope' });
requests.add(reminderRequestSchema, { id: 'ReminderRequest' });
requests.add(jsonValueSchema, { id: 'JsonValue' });

const replies = z.registry<{ id: string }>();
for (const [id, schema] of Object.entries({
  Accepted: api.acceptedSchema,
  Duplicate: api.duplicateSchema,
  Ignored: api.ignoredSchema,
  Unmatched: api.unmatchedSchema,
  Rejected: api.rejectedSchema,
  ReminderStatus: api.reminderStatusSchema,
  ReminderScheduled: api.reminderScheduledSchema,
  ReminderDuplicate: api.reminderDuplicateSchema,
  ReminderView: api.reminderViewSchema,
  ReminderCancelled: api.reminderCancelledSchema,
  Health: api.healthSchema,
  Readiness: api.readinessSchema,
  EventInspection: api.eventInspectionSchema,
})) {
  replies.add(schema, { id });
}

const uri = (id: string) => `#/components/schemas/${id}`;

function withoutDocumentKeys(schema: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema' && key !== '$id'));
}

/** zod marks each generated schema as a document of its own; inside OpenAPI it is a component. */
function asComponents(schemas: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, withoutDocumentKeys(schema)]));
}

/** Every free-text string of a request is storable text: what a generator must not send, named. */
function storableText({ jsonSchema }: { jsonSchema: JsonSchema }) {
  const plainString =
    jsonSchema.type === 'string' &&
    jsonSchema.pattern === undefined &&
    jsonSchema.format === undefined &&
    jsonSchema.enum === undefined &&
    jsonSchema.const === undefined;
  if (plainString) jsonSchema.pattern = STORABLE;
}

export const componentSchemas: Record<string, JsonSchema> = {
  ...asComponents(
    z.toJSONSchema(requests, { io: 'input', uri, override: storableText }).schemas as Record<
      string,
      JsonSchema
    >,
  ),
  ...asComponents(z.toJSONSchema(replies, { io: 'output', uri }).schemas as Record<string, JsonSchema>),
};

/** A path parameter or header carrying an ID, from its schema. */
export function idSchema(schema: z.ZodType): JsonSchema {
  return { ...withoutDocumentKeys(z.toJSONSchema(schema) as JsonSchema), maxLength: ID_MAX_LENGTH };
}

export const ref = (name: string) => ({ $ref: uri(name) });
export const json = (schema: object, description: string, headers?: object) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});
export const rejected = (description: string) => json(ref('Rejected'), description);
export const unavailable = json(
  ref('Rejected'),
  'Temporal or PostgreSQL unreachable, or no PostgreSQL connection free within SETTLE_ADMISSION_WAIT; nothing was acknowledged.',
  {
    'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  },
);
