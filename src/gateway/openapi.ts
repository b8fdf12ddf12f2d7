import { PAYMENT_EVENT_TYPES } from '../domain/payment-event';
import { WEBHOOK_URL_PATTERN } from '../domain/reminder';
import { MAX_JSON_DEPTH } from '../domain/untrusted-json';
import { ErrorCode } from '../domain/errors';
import { MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_PARAM_LENGTH } from './limits';
import { providerPaths } from './openapi-providers';

const json = (schema: object, description: string, headers?: object) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const rejected = (description: string) => json(ref('Rejected'), description);
const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
};
const unavailable = json(
  ref('Rejected'),
  'Temporal or PostgreSQL unreachable; nothing was acknowledged.',
  retryAfter,
);
const bearer = [{ bearerToken: [] }];

/** IDs and keys: the event ID's alphabet and length (SPEC.md). */
const ID_PATTERN = '^[A-Za-z0-9_.:-]{1,200}$';
/** Text PostgreSQL can store: no NUL (a lone surrogate cannot be sent as UTF-8 at all). */
const STORABLE = '^[^\\u0000]*$';
const storable = (extra: object = {}) => ({ type: 'string', pattern: STORABLE, ...extra });
const nullable = (schema: object) => ({ oneOf: [{ type: 'null' }, schema] });
const timestamp = { type: 'string', format: 'date-time' };
const idParameter = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern: ID_PATTERN, maxLength: 200 },
});

/**
 * What every route can answer besides its own statuses: the framework's refusals and a failure of
 * settle or PostgreSQL. All of them carry the Rejected body and never repeat the URL or an ID.
 */
const everyRoute = {
  '400': rejected(
    "The request could not be read (`bad_request`: broken HTTP, a control character in a header, bad percent-encoding), or the route's own refusal below.",
  ),
  '405': rejected('Wrong method for this path (`method_not_allowed`, with an `Allow` header).'),
  '413': rejected(`Body larger than ${MAX_BODY_BYTES / 1024} KiB (\`payload_too_large\`).`),
  '414': rejected(`A path parameter longer than ${MAX_PARAM_LENGTH} characters (\`uri_too_long\`).`),
  '415': rejected('A body that is not application/json (`unsupported_media_type`).'),
  '431': rejected(
    `Request line and headers larger than ${MAX_HEADER_BYTES / 1024} KiB (\`headers_too_large\`).`,
  ),
  '500': rejected('settle itself failed (`internal_error`); logged, safe to retry.'),
  '503': unavailable,
};

/** The HTTP API of SPEC.md as OpenAPI 3.1, served at `GET /openapi.json`. */
export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'settle',
    version: '1',
    description:
      'Payment webhooks and renewal reminders turned into business effects that commit exactly once.',
  },
  paths: {
    '/webhooks/payments': {
      post: {
        operationId: 'receivePaymentEvent',
        summary: 'A signed payment event from the provider (Standard Webhooks).',
        parameters: [
          { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' } },
          {
            name: 'webhook-timestamp',
            in: 'header',
            required: true,
            description: 'Unix seconds; refused when more than 5 minutes old or ahead.',
            schema: { type: 'string', pattern: '^\\d+$' },
          },
          {
            name: 'webhook-signature',
            in: 'header',
            required: true,
            description: 'Space-separated `v1,<base64 HMAC-SHA256>` over `id.timestamp.body`.',
            schema: { type: 'string' },
          },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('PaymentEvent') } },
        },
        responses: {
          '200': json(
            { oneOf: [ref('Duplicate'), ref('Ignored')] },
            'Same event ID and payload already known, or an unhandled type.',
          ),
          '202': json(ref('Accepted'), 'New event; its workflow start is durable.'),
          ...everyRoute,
          '400': rejected(
            `\`invalid_event\`: malformed JSON, schema violation, bad ID, a NUL or unpaired surrogate in any string or key, or nesting deeper than ${MAX_JSON_DEPTH} levels (field paths in \`issues\`); or \`bad_request\`.`,
          ),
          '401': rejected('Missing, malformed or wrong signature, or timestamp outside tolerance.'),
          '409': rejected(
            'Same event ID with a different payload (another type included); the original effect stands.',
          ),
        },
      },
    },
    ...providerPaths(everyRoute),
    '/reminders': {
      post: {
        operationId: 'scheduleReminder',
        summary: 'Schedule a renewal reminder delivery.',
        security: bearer,
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: true,
            description: 'The delivery ID, e.g. renewal-2026-08-10-8472.',
            schema: { type: 'string', pattern: ID_PATTERN, maxLength: 200 },
          },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('ReminderRequest') } },
        },
        responses: {
          '200': json(ref('ReminderDuplicate'), 'Same key and body again.'),
          '202': json(ref('ReminderScheduled'), 'Scheduled.'),
          ...everyRoute,
          '400': rejected(
            `\`invalid_reminder\`: schema violation, missing or bad Idempotency-Key, a NUL or unpaired surrogate anywhere, nesting deeper than ${MAX_JSON_DEPTH} levels, or a refused webhook_url (field paths in \`issues\`); or \`bad_request\`.`,
          ),
          '401': rejected('Missing or wrong bearer token.'),
          '409': rejected('Same key with a different body.'),
        },
      },
    },
    '/reminders/{deliveryId}': {
      parameters: [idParameter('deliveryId', 'The Idempotency-Key the reminder was scheduled with.')],
      get: {
        operationId: 'getReminder',
        summary: 'State and attempts of one reminder delivery.',
        security: bearer,
        responses: {
          '200': json(ref('ReminderView'), 'The delivery record.'),
          ...everyRoute,
          '400': rejected(
            '`invalid_reminder`: the path parameter is not a delivery ID (`params.deliveryId`).',
          ),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('Unknown delivery ID.'),
        },
      },
      delete: {
        operationId: 'cancelReminder',
        summary: 'Cancel a reminder before it is due.',
        security: bearer,
        responses: {
          '200': json(ref('ReminderCancelled'), 'Cancelled (again: the same answer).'),
          ...everyRoute,
          '400': rejected(
            '`invalid_reminder`: the path parameter is not a delivery ID (`params.deliveryId`).',
          ),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('Unknown delivery ID.'),
          '409': rejected('Already being delivered or delivered (`reminder_not_cancellable`).'),
        },
      },
    },
    '/events/{eventId}': {
      get: {
        operationId: 'inspectEvent',
        summary: 'Everything known about one event (same JSON as `settle inspect --json`).',
        security: bearer,
        parameters: [idParameter('eventId', "The provider's event ID.")],
        responses: {
          '200': json(ref('EventInspection'), 'The event.'),
          ...everyRoute,
          '400': rejected('`invalid_event`: the path parameter is not an event ID (`params.eventId`).'),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('settle has no record of this event (`error: not_found`).'),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'health',
        summary: 'The process is up.',
        responses: {
          '200': json(
            {
              type: 'object',
              required: ['status'],
              additionalProperties: false,
              properties: { status: { const: 'ok' } },
            },
            'Up.',
          ),
          ...everyRoute,
        },
      },
    },
    '/readyz': {
      get: {
        operationId: 'ready',
        summary:
          "PostgreSQL answers and Temporal answers for settle's namespace (DescribeNamespace, cached 2 s).",
        responses: {
          '200': json(ref('Readiness'), 'Ready.'),
          ...everyRoute,
          '503': json(
            ref('Readiness'),
            'Not ready; the booleans say which dependency is down, temporal_error why Temporal refuses.',
          ),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus text: SLO figures and the Temporal SDK metrics.',
        responses: {
          '200': {
            description: 'Prometheus exposition format.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...everyRoute,
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openApi',
        summary: 'This document.',
        responses: { '200': json({ type: 'object' }, 'OpenAPI 3.1.'), ...everyRoute },
      },
    },
  },
  components: {
    securitySchemes: { bearerToken: { type: 'http', scheme: 'bearer', description: 'SETTLE_API_TOKEN' } },
    schemas: {
      PaymentEvent: {
        type: 'object',
        description: `At most ${MAX_BODY_BYTES / 1024} KiB and ${MAX_JSON_DEPTH} levels of nesting; no NUL or unpaired surrogate in any string or key. Unknown fields are kept.`,
        required: ['id', 'type', 'created_at', 'data'],
        additionalProperties: true,
        properties: {
          id: { type: 'string', pattern: ID_PATTERN },
          type: storable({
            minLength: 1,
            maxLength: 200,
            description: `Handled: ${PAYMENT_EVENT_TYPES.join(', ')}. Any other type is acknowledged as ignored, unless its ID is known (409).`,
          }),
          created_at: timestamp,
          data: {
            type: 'object',
            required: ['shipment_id', 'payment_id', 'amount', 'currency'],
            additionalProperties: true,
            properties: {
              shipment_id: storable({ minLength: 1, maxLength: 200 }),
              payment_id: storable({ minLength: 1, maxLength: 200 }),
              amount: {
                type: 'integer',
                minimum: 0,
                maximum: Number.MAX_SAFE_INTEGER,
                description: 'Minor units.',
              },
              currency: { type: 'string', pattern: '^[A-Z]{3}$' },
            },
          },
        },
      },
      Accepted: {
        type: 'object',
        additionalProperties: false,
        required: ['status', 'event_id', 'workflow_id', 'run_id'],
        properties: {
          status: { const: 'accepted' },
          event_id: { type: 'string' },
          workflow_id: { type: 'string' },
          run_id: { type: 'string' },
        },
      },
      Duplicate: {
        type: 'object',
        additionalProperties: false,
        required: ['status', 'event_id', 'workflow_id'],
        properties: {
          status: { const: 'duplicate' },
          event_id: { type: 'string' },
          workflow_id: { type: 'string' },
        },
      },
      Ignored: {
        type: 'object',
        additionalProperties: false,
        required: ['status', 'event_id'],
        properties: { status: { const: 'ignored' }, event_id: { type: 'string' } },
      },
      Rejected: {
        type: 'object',
        description: 'Every refusal and failure, whatever its status. It never repeats the URL or an ID.',
        required: ['status', 'error', 'message'],
        additionalProperties: false,
        properties: {
          status: { const: 'rejected' },
          error: { type: 'string', enum: Object.values(ErrorCode) },
          message: { type: 'string' },
          issues: {
            type: 'array',
            items: {
              type: 'object',
              required: ['path', 'message'],
              additionalProperties: false,
              properties: { path: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
      ReminderRequest: {
        type: 'object',
        description: `At most ${MAX_BODY_BYTES / 1024} KiB and ${MAX_JSON_DEPTH} levels of nesting; no NUL or unpaired surrogate anywhere. Unknown fields are refused.`,
        required: ['contract_id', 'due_at', 'webhook_url'],
        additionalProperties: false,
        properties: {
          contract_id: storable({ minLength: 1, maxLength: 200 }),
          due_at: timestamp,
          webhook_url: {
            type: 'string',
            maxLength: 2048,
            description:
              'http(s), no credentials. Refused when the host is, or resolves to, an address the IANA special-purpose registries do not mark globally reachable (docs/limits.md).',
            pattern: WEBHOOK_URL_PATTERN,
          },
          payload: { ...ref('JsonValue'), description: 'Optional; delivered as sent.' },
        },
      },
      JsonValue: {
        description: 'Any JSON without a NUL in a string or key.',
        oneOf: [
          { type: 'null' },
          { type: 'boolean' },
          { type: 'number' },
          storable(),
          { type: 'array', items: ref('JsonValue') },
          { type: 'object', propertyNames: { pattern: STORABLE }, additionalProperties: ref('JsonValue') },
        ],
      },
      ReminderScheduled: {
        type: 'object',
        required: ['status', 'delivery_id', 'workflow_id', 'due_at'],
        additionalProperties: false,
        properties: {
          status: { enum: ['scheduled', 'duplicate'] },
          delivery_id: { type: 'string' },
          workflow_id: { type: 'string' },
          due_at: timestamp,
        },
      },
      ReminderDuplicate: {
        type: 'object',
        required: ['status', 'delivery_id', 'workflow_id'],
        additionalProperties: false,
        properties: {
          status: { const: 'duplicate' },
          delivery_id: { type: 'string' },
          workflow_id: { type: 'string' },
          state: { ...ref('ReminderStatus'), description: "Where the first request's delivery is now." },
          due_at: timestamp,
        },
      },
      ReminderStatus: { enum: ['scheduled', 'processing', 'succeeded', 'failed', 'cancelled'] },
      ReminderView: {
        type: 'object',
        required: [
          'delivery_id',
          'contract_id',
          'workflow_id',
          'status',
          'due_at',
          'webhook_url',
          'lease_expires_at',
          'last_error',
          'created_at',
          'completed_at',
          'attempt_count',
          'attempts',
        ],
        additionalProperties: false,
        properties: {
          delivery_id: { type: 'string' },
          contract_id: { type: 'string' },
          workflow_id: { type: 'string' },
          status: ref('ReminderStatus'),
          due_at: timestamp,
          webhook_url: { type: 'string' },
          lease_expires_at: nullable(timestamp),
          last_error: nullable({ type: 'string' }),
          created_at: timestamp,
          completed_at: nullable(timestamp),
          attempt_count: { type: 'integer', minimum: 0 },
          attempts: {
            type: 'array',
            items: {
              type: 'object',
              required: ['attempt', 'started_at', 'lease_expires_at', 'finished_at', 'status_code', 'error'],
              additionalProperties: false,
              properties: {
                attempt: { type: 'integer' },
                started_at: timestamp,
                lease_expires_at: timestamp,
                finished_at: nullable(timestamp),
                status_code: nullable({ type: 'integer' }),
                error: nullable({ type: 'string' }),
              },
            },
          },
        },
      },
      ReminderCancelled: {
        type: 'object',
        required: ['status', 'delivery_id', 'workflow_id'],
        additionalProperties: false,
        properties: {
          status: { const: 'cancelled' },
          delivery_id: { type: 'string' },
          workflow_id: { type: 'string' },
        },
      },
      Readiness: {
        type: 'object',
        additionalProperties: false,
        required: ['status', 'postgres', 'temporal'],
        properties: {
          status: { enum: ['ready', 'not_ready'] },
          postgres: { type: 'boolean' },
          temporal: { type: 'boolean', description: "settle's namespace answers DescribeNamespace." },
          temporal_error: {
            enum: ['namespace_not_found', 'unauthenticated', 'permission_denied', 'tls'],
            description: 'Why Temporal refuses settle, when it answers at all.',
          },
          message: { type: 'string', description: 'The cause in words, naming the namespace.' },
        },
      },
      EventInspection: {
        type: 'object',
        required: [
          'event_id',
          'type',
          'workflow_id',
          'payload_sha256',
          'outcome',
          'workflow',
          'shipment',
          'ledger',
          'deliveries',
        ],
        properties: {
          event_id: { type: 'string' },
          type: { type: ['string', 'null'] },
          workflow_id: { type: 'string' },
          payload_sha256: { type: 'string' },
          received_at: nullable(timestamp),
          claimed_at: nullable(timestamp),
          outcome: { enum: ['applied', 'stale', 'unmatched', 'needs_review', null] },
          workflow: {
            oneOf: [
              { type: 'null' },
              { type: 'object', properties: { status: { type: 'string' }, run_id: { type: 'string' } } },
            ],
          },
          workflow_error: {
            type: 'string',
            description:
              'Set when Temporal could not be asked: temporal_unavailable, temporal_namespace_not_found, ' +
              'temporal_unauthenticated, temporal_permission_denied, temporal_tls.',
          },
          workflow_error_message: { type: 'string', description: 'What workflow_error means here.' },
          start_outcome_unknown_at: {
            type: 'string',
            format: 'date-time',
            description:
              'When a start of this event last ended with its outcome unknown (answered 503, yet Temporal ' +
              'may have started it): why a later delivery was answered `duplicate`.',
          },
          shipment: {
            oneOf: [
              { type: 'null' },
              {
                type: 'object',
                properties: { shipment_id: { type: 'string' }, payment_status: { type: 'string' } },
              },
            ],
          },
          missing_shipment_id: {
            type: ['string', 'null'],
            description: 'The shipment the event names when no such shipment exists (why it is unmatched).',
          },
          ledger: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                kind: { type: 'string' },
                amount: { type: 'integer' },
                currency: { type: 'string' },
                event_id: { type: 'string' },
              },
            },
          },
          deliveries: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                target: { type: 'string' },
                status: { type: 'string' },
                attempts: { type: 'integer' },
                idempotency_key: { type: 'string' },
              },
            },
          },
        },
      },
    },
  },
} as const;
