import { PAYMENT_EVENT_TYPES } from '../domain/payment-event';
import { ErrorCode } from '../errors';

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
          '400': rejected('Malformed JSON, schema violation (field paths in `issues`) or a bad ID.'),
          '401': rejected('Missing, malformed or wrong signature, or timestamp outside tolerance.'),
          '405': rejected('Wrong method.'),
          '409': rejected('Same event ID with a different payload; the original effect stands.'),
          '413': rejected('Body larger than 256 KiB.'),
          '415': rejected('Not application/json.'),
          '503': unavailable,
        },
      },
    },
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
            schema: { type: 'string' },
          },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('ReminderRequest') } },
        },
        responses: {
          '200': json(ref('ReminderScheduled'), 'Same key and body again: `status: duplicate`.'),
          '202': json(ref('ReminderScheduled'), 'Scheduled: `status: scheduled`.'),
          '400': rejected('Schema violation, missing Idempotency-Key, or a refused webhook_url.'),
          '401': rejected('Missing or wrong bearer token.'),
          '409': rejected('Same key with a different body.'),
          '503': unavailable,
        },
      },
    },
    '/reminders/{deliveryId}': {
      parameters: [{ name: 'deliveryId', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        operationId: 'getReminder',
        summary: 'State and attempts of one reminder delivery.',
        security: bearer,
        responses: {
          '200': json(ref('ReminderState'), 'The delivery record.'),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('Unknown delivery ID.'),
        },
      },
      delete: {
        operationId: 'cancelReminder',
        summary: 'Cancel a reminder before it is due.',
        security: bearer,
        responses: {
          '200': json(ref('ReminderState'), 'Cancelled.'),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('Unknown delivery ID.'),
          '409': rejected('Already being delivered or delivered.'),
        },
      },
    },
    '/events/{eventId}': {
      get: {
        operationId: 'inspectEvent',
        summary: 'Everything known about one event (same JSON as `settle inspect --json`).',
        security: bearer,
        parameters: [{ name: 'eventId', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': json(ref('EventInspection'), 'The event.'),
          '401': rejected('Missing or wrong bearer token.'),
          '404': rejected('settle has no record of this event (`error: not_found`).'),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'health',
        summary: 'The process is up.',
        responses: { '200': json({ type: 'object', properties: { status: { const: 'ok' } } }, 'Up.') },
      },
    },
    '/readyz': {
      get: {
        operationId: 'ready',
        summary:
          "PostgreSQL answers and Temporal answers for settle's namespace (DescribeNamespace, cached 2 s).",
        responses: {
          '200': json(ref('Readiness'), 'Ready.'),
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
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openApi',
        summary: 'This document.',
        responses: { '200': json({ type: 'object' }, 'OpenAPI 3.1.') },
      },
    },
  },
  components: {
    securitySchemes: { bearerToken: { type: 'http', scheme: 'bearer', description: 'SETTLE_API_TOKEN' } },
    schemas: {
      PaymentEvent: {
        type: 'object',
        required: ['id', 'type', 'created_at', 'data'],
        additionalProperties: true,
        properties: {
          id: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,200}$' },
          type: {
            type: 'string',
            description: `Handled: ${PAYMENT_EVENT_TYPES.join(', ')}. Any other type is acknowledged as ignored.`,
          },
          created_at: { type: 'string', format: 'date-time' },
          data: {
            type: 'object',
            required: ['shipment_id', 'payment_id', 'amount', 'currency'],
            additionalProperties: true,
            properties: {
              shipment_id: { type: 'string' },
              payment_id: { type: 'string' },
              amount: { type: 'integer', minimum: 0, description: 'Minor units.' },
              currency: { type: 'string', pattern: '^[A-Z]{3}$' },
            },
          },
        },
      },
      Accepted: {
        type: 'object',
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
        required: ['status', 'event_id', 'workflow_id'],
        properties: {
          status: { const: 'duplicate' },
          event_id: { type: 'string' },
          workflow_id: { type: 'string' },
        },
      },
      Ignored: {
        type: 'object',
        required: ['status', 'event_id'],
        properties: { status: { const: 'ignored' }, event_id: { type: 'string' } },
      },
      Rejected: {
        type: 'object',
        required: ['status', 'error', 'message'],
        properties: {
          status: { const: 'rejected' },
          error: { type: 'string', enum: Object.values(ErrorCode) },
          message: { type: 'string' },
          issues: {
            type: 'array',
            items: {
              type: 'object',
              properties: { path: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
      ReminderRequest: {
        type: 'object',
        required: ['contract_id', 'due_at', 'webhook_url', 'payload'],
        properties: {
          contract_id: { type: 'string' },
          due_at: { type: 'string', format: 'date-time' },
          webhook_url: { type: 'string', format: 'uri' },
          payload: {},
        },
      },
      ReminderScheduled: {
        type: 'object',
        required: ['status', 'delivery_id', 'workflow_id'],
        properties: {
          status: { enum: ['scheduled', 'duplicate'] },
          delivery_id: { type: 'string' },
          workflow_id: { type: 'string' },
        },
      },
      ReminderState: {
        type: 'object',
        required: ['delivery_id', 'status'],
        properties: {
          delivery_id: { type: 'string' },
          status: { enum: ['scheduled', 'processing', 'succeeded', 'failed', 'cancelled'] },
          attempts: { type: 'array', items: { type: 'object' } },
        },
      },
      Readiness: {
        type: 'object',
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
