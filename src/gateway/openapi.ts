import { MAX_JSON_DEPTH } from '../domain/untrusted-json';
import { deliveryIdSchema } from '../domain/reminder';
import { eventIdSchema } from '../domain/payment-event';
import { MAX_HEADER_BYTES } from '../lib/listener-limits';
import { MAX_BODY_BYTES, MAX_PARAM_LENGTH } from './limits';
import { PROVIDER_MODULES } from '../providers/registry';
import { componentSchemas, idSchema, json, ref, rejected, unavailable } from './openapi-schemas';

const bearer = [{ bearerToken: [] }];
const idParameter = (name: string, description: string, schema: typeof eventIdSchema) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: idSchema(schema),
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

/**
 * The HTTP API of SPEC.md as OpenAPI 3.1, served at `GET /openapi.json`. The paths and their prose
 * are written here; every schema is generated from the zod schemas the gateway validates and
 * answers with (openapi-schemas.ts).
 */
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
          content: {
            'application/json': {
              schema: {
                description: `At most ${MAX_BODY_BYTES / 1024} KiB and ${MAX_JSON_DEPTH} levels of nesting; no NUL or unpaired surrogate in any string or key. Unknown fields are kept. A handled type must be a whole PaymentEvent; any other type needs only the envelope and is acknowledged as ignored, unless its ID is known (409).`,
                anyOf: [ref('PaymentEvent'), ref('EventEnvelope')],
              },
            },
          },
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
    // Each provider's route, from its module (src/providers/<name>/openapi.ts).
    ...Object.assign(
      {},
      ...PROVIDER_MODULES.map((module) => module.openapi({ everyRoute, json, ref, rejected, unavailable })),
    ),
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
            schema: idSchema(deliveryIdSchema),
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                description: `At most ${MAX_BODY_BYTES / 1024} KiB and ${MAX_JSON_DEPTH} levels of nesting; no NUL or unpaired surrogate anywhere. Unknown fields are refused. webhook_url is refused when its host is, or resolves to, an address the IANA special-purpose registries do not mark globally reachable (docs/limits.md).`,
                ...ref('ReminderRequest'),
              },
            },
          },
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
      parameters: [
        idParameter('deliveryId', 'The Idempotency-Key the reminder was scheduled with.', deliveryIdSchema),
      ],
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
        parameters: [idParameter('eventId', "The provider's event ID.", eventIdSchema)],
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
          '200': json(ref('Health'), 'Up.'),
          ...everyRoute,
        },
      },
    },
    '/readyz': {
      get: {
        operationId: 'ready',
        summary:
          "PostgreSQL answers and Temporal answers for settle's namespace (DescribeNamespace); the answer is cached 1 s. " +
          'Why Temporal refuses settle (`temporal_error`, `message`) is told only to a bearer of SETTLE_API_TOKEN, or on the operator listener (SETTLE_GATEWAY_METRICS_PORT).',
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
        summary:
          'Prometheus text: SLO figures and the Temporal SDK metrics; the gauges read from PostgreSQL at most once a second. ' +
          'Prometheus scrapes the operator listener instead (SETTLE_GATEWAY_METRICS_PORT, no token).',
        security: bearer,
        responses: {
          '200': {
            description: 'Prometheus exposition format.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...everyRoute,
          '401': rejected('Missing or wrong bearer token (or no SETTLE_API_TOKEN configured).'),
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
    schemas: componentSchemas,
  },
} as const;
