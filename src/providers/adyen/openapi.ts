import type { OpenApiParts } from '../module';

/** `POST /webhooks/adyen` in /openapi.json (docs/providers.md). */
export function adyenOpenApi({ everyRoute, rejected, unavailable }: OpenApiParts) {
  const anyObject = { type: 'object', additionalProperties: true };
  return {
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
  };
}
