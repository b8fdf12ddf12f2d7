import type { OpenApiParts } from '../module';

/** `POST /webhooks/paypal` in /openapi.json (docs/providers.md). */
export function paypalOpenApi({ everyRoute, json, ref, rejected }: OpenApiParts) {
  const anyObject = { type: 'object', additionalProperties: true };
  return {
    '/webhooks/paypal': {
      post: {
        operationId: 'receivePaypalEvent',
        summary: 'A PayPal webhook event, verified with PayPal’s certificate signature (docs/providers.md).',
        description:
          'PAYMENT.CAPTURE.COMPLETED → captured; PAYMENT.CAPTURE.REFUNDED, PAYMENT.CAPTURE.REVERSED → refunded ' +
          '(one ledger refund per refund object); CUSTOMER.DISPUTE.CREATED, PAYMENT.CAPTURE.DENIED → failed (no ' +
          'effect on a captured payment: status never moves backwards); PAYMENT.CAPTURE.PENDING and ' +
          'CUSTOMER.DISPUTE.RESOLVED are ignored. The settle event ID is the PayPal event ID (`WH-…`); the ' +
          'shipment is the resource’s custom_id (a dispute’s disputed_transactions[0].custom). The signature ' +
          'covers transmission ID, time, a configured webhook ID and only the body’s CRC32: each transmission ID ' +
          'is taken once with the body’s SHA-256, and with SETTLE_PAYPAL_CLIENT_ID and _SECRET set each event is ' +
          'confirmed by PayPal’s API before it is admitted. With SETTLE_PROVIDER_MODE set, a verified event of ' +
          'the other mode (sandbox or live host in its links) is ignored and writes nothing.',
        parameters: [
          {
            name: 'PAYPAL-TRANSMISSION-ID',
            in: 'header',
            required: true,
            description:
              'The delivery’s ID (signed), at most 200 characters; taken once, with the body’s SHA-256.',
            schema: { type: 'string' },
          },
          {
            name: 'PAYPAL-TRANSMISSION-TIME',
            in: 'header',
            required: true,
            description: 'RFC 3339 time of the delivery (signed); refused outside 300 s of now.',
            schema: { type: 'string' },
          },
          {
            name: 'PAYPAL-TRANSMISSION-SIG',
            in: 'header',
            required: true,
            description: 'Base64 RSA-SHA256 signature over `<id>|<time>|<webhook id>|<crc32 of body>`.',
            schema: { type: 'string' },
          },
          {
            name: 'PAYPAL-CERT-URL',
            in: 'header',
            required: true,
            description:
              'https URL of the signing certificate on a paypal.com host (`/v1/notifications/certs/…`); fetched ' +
              'without its query with a 5 s / 64 KiB bound and cached (a failure for 30 s), or ' +
              'SETTLE_PAYPAL_CERT_PATH is used instead.',
            schema: { type: 'string' },
          },
          {
            name: 'PAYPAL-AUTH-ALGO',
            in: 'header',
            required: true,
            description: '`SHA256withRSA`.',
            schema: { type: 'string' },
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { ...anyObject, description: 'A PayPal webhook event.' } },
          },
        },
        responses: {
          ...everyRoute,
          '200': json(
            { oneOf: [ref('Duplicate'), ref('Ignored'), ref('Unmatched')] },
            'Already known (duplicate), a type settle does not act on or of the other SETTLE_PROVIDER_MODE ' +
              '(ignored), or no shipment named (unmatched).',
          ),
          '202': json(ref('Accepted'), 'New event; its workflow start is durable.'),
          '400': rejected('Signed, but not a PayPal event settle can read (field path in `issues`).'),
          '401': rejected(
            'Missing header or wrong signature, transmission time outside 300 s, a certificate URL that is not ' +
              'PayPal’s or a certificate that is not (or no longer) valid, or no webhook ID configured.',
          ),
          '405': rejected('Wrong method.'),
          '409': rejected(
            'Same event ID with a different payload (`idempotency_key_reused`), or a PAYPAL-TRANSMISSION-ID ' +
              'already taken with another body (`transmission_reused`); the original effect stands.',
          ),
          '413': rejected('Body larger than 256 KiB.'),
          '415': rejected('Not application/json.'),
          '422': rejected(
            'PayPal’s API has no such event, or one that decides otherwise (`event_not_confirmed`); nothing ' +
              'was admitted. Only with SETTLE_PAYPAL_CLIENT_ID and _SECRET set.',
          ),
          '503': json(
            ref('Rejected'),
            'Temporal or PostgreSQL unreachable (as on every route), or PayPal’s certificate could not be ' +
              'fetched or its API did not answer (`provider_unavailable`); nothing was acknowledged.',
            {
              'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
            },
          ),
        },
      },
    },
  };
}
