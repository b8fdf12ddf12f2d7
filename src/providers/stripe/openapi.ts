import type { OpenApiParts } from '../module';

/** `POST /webhooks/stripe` in /openapi.json (docs/providers.md). */
export function stripeOpenApi({ everyRoute, json, ref, rejected, unavailable }: OpenApiParts) {
  const anyObject = { type: 'object', additionalProperties: true };
  return {
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
          content: {
            'application/json': { schema: { ...anyObject, description: 'A Stripe event object.' } },
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
  };
}
