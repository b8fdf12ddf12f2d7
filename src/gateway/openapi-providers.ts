import { json, ref, rejected, unavailable } from './openapi-schemas';

/** `/webhooks/stripe`, `/webhooks/adyen` and `/webhooks/paypal` for the OpenAPI document (see docs/providers.md). */
const anyObject = { type: 'object', additionalProperties: true };

/** `everyRoute`: the framework's refusals and settle's own failures, the same on every route. */
export const providerPaths = (everyRoute: Record<string, object>) => ({
  '/webhooks/stripe': {
    post: {
      operationId: 'receiveStripeEvent',
      summary: 'A Stripe event, verified with the `stripe` package (docs/providers.md).',
      description:
        'payment_intent.amount_capturable_updated → authorized; payment_intent.succeeded, charge.captured → ' +
        'captured; charge.refunded, refund.created → refunded (one ledger refund per refund object); ' +
        'payment_intent.payment_failed → failed. The settle event ID is the Stripe event ID; the shipment is ' +
        'the object’s metadata.shipment_id. Every field is read from the signed body. With SETTLE_PROVIDER_MODE ' +
        'set, a verified event whose livemode is of the other mode is ignored and writes nothing.',
      parameters: [
        {
          name: 'Stripe-Signature',
          in: 'header',
          required: true,
          description:
            '`t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…]`; any v1 matching any of SETTLE_STRIPE_WEBHOOK_SECRETS ' +
            'within 300 s.',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { ...anyObject, description: 'A Stripe event object.' } } },
      },
      responses: {
        ...everyRoute,
        '200': json(
          { oneOf: [ref('Duplicate'), ref('Ignored'), ref('Unmatched')] },
          'Already known (duplicate), a type settle does not act on or of the other SETTLE_PROVIDER_MODE ' +
            '(ignored), or no shipment named (unmatched).',
        ),
        '202': json(ref('Accepted'), 'New event; its workflow start is durable.'),
        '400': rejected('Signed, but not a Stripe event settle can read (field path in `issues`).'),
        '401': rejected('Missing or wrong signature, timestamp outside 300 s, or no secret configured.'),
        '405': rejected('Wrong method.'),
        '409': rejected('Same event ID with a different payload; the original effect stands.'),
        '413': rejected('Body larger than 256 KiB.'),
        '415': rejected('Not application/json.'),
        '503': unavailable,
      },
    },
  },
  '/webhooks/adyen': {
    post: {
      operationId: 'receiveAdyenNotifications',
      summary: 'A batch of Adyen notification items, each HMAC-verified with `@adyen/api-library`.',
      description:
        'AUTHORISATION success=true → authorized, success=false → failed; CAPTURE → captured; REFUND → ' +
        'refunded; CANCELLATION → failed; unsuccessful CAPTURE/REFUND/CANCELLATION and other codes are ' +
        'ignored. The settle event ID is `adyen:<pspReference>:<eventCode>:<success>`; the shipment is ' +
        'merchantReference. Only HMAC-covered fields decide (pspReference, originalReference, ' +
        'merchantAccountCode, merchantReference, amount, eventCode, success); the rest is stored at most. ' +
        '`[accepted]` only once every item is durably admitted. With SETTLE_PROVIDER_MODE set, a verified ' +
        'batch whose `live` is of the other mode is acknowledged with `[accepted]` and admits nothing.',
      parameters: [
        {
          name: 'Authorization',
          in: 'header',
          required: false,
          description:
            '`Basic <base64 user:password>`, required when SETTLE_ADYEN_BASIC_AUTH is set (settle starts with ' +
            'Adyen HMAC keys and no basic auth only if SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH=true).',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['notificationItems'],
              properties: {
                live: {
                  type: 'string',
                  enum: ['true', 'false'],
                  description: 'The account’s mode; not covered by any HMAC (SETTLE_PROVIDER_MODE).',
                },
                notificationItems: {
                  type: 'array',
                  minItems: 1,
                  items: {
                    type: 'object',
                    required: ['NotificationRequestItem'],
                    properties: { NotificationRequestItem: anyObject },
                  },
                },
              },
            },
          },
        },
      },
      responses: {
        ...everyRoute,
        '200': {
          description:
            'Every item admitted (new, duplicate, ignored or unmatched), or a batch of the other ' +
            'SETTLE_PROVIDER_MODE, ignored whole.',
          content: { 'text/plain': { schema: { const: '[accepted]' } } },
        },
        '400': rejected('Not a notification batch, or an item settle cannot read; nothing admitted.'),
        '401': rejected(
          'Basic auth refused, or an item whose HMAC matches no key or does not fix its values (a `:` in a ' +
            'signed value other than merchantReference, or one that is not a string); nothing admitted.',
        ),
        '405': rejected('Wrong method.'),
        '413': rejected('Body larger than 256 KiB.'),
        '415': rejected('Not application/json.'),
        '503': unavailable,
      },
    },
  },
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
        content: { 'application/json': { schema: { ...anyObject, description: 'A PayPal webhook event.' } } },
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
});
