/**
 * hmacProvider(spec) (src/providers/hmac/provider.ts): a whole provider module from a spec alone. An
 * imaginary provider declared in this file gets its variables, start-up check, route, OpenAPI path,
 * simulator and deploy needs from its data; the real entries' variables stop a start naming them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { openApiDocument } from '../../src/gateway/openapi';
import { hmacProvider } from '../../src/providers/hmac/provider';
import type { HmacProviderSpec } from '../../src/providers/hmac/spec';
import type { OpenApiParts } from '../../src/providers/module';
import { newHmacKey } from '../support/providers';

const ZETA = {
  name: 'zeta',
  displayName: 'Zeta Pay',
  route: '/webhooks/zeta',
  variables: { keys: 'SETTLE_ZETA_KEYS', notificationUrl: 'SETTLE_ZETA_URL' },
  signature: {
    header: { name: 'Zeta-Signature', format: 'plain', prefix: 'sha256=' },
    content: '{url}{body}',
    algorithm: 'sha256',
    encoding: 'hex',
  },
  fields: {
    eventId: '/id',
    type: '/type',
    createdAt: ['/at'],
    shipment: ['/payment/order'],
    paymentId: ['/payment/id'],
    refundId: ['/refund/id'],
    amount: ['/payment/amount'],
    currency: ['/payment/currency'],
  },
  types: { 'payment.done': { to: 'payment.captured' } },
  money: { kind: 'minor-units', decimals: 'iso' },
} as const satisfies HmacProviderSpec<'zeta'>;

const zeta = hmacProvider(ZETA);
const URL = 'https://settle.example.com/hooks/zeta';
const parts: OpenApiParts = {
  everyRoute: {},
  json: (schema) => ({ schema }),
  ref: (name) => ({ $ref: name }),
  rejected: (description) => ({ description }),
  unavailable: {},
};

describe('an HMAC provider module, built from its spec alone', () => {
  test('its variables, named as the spec names them; the key a secret, both required by its route', () => {
    assert.deepEqual(
      Object.entries(zeta.variables).map(([key, variable]) => [key, variable.name, variable.secret === true]),
      [
        ['zetaKeys', 'SETTLE_ZETA_KEYS', true],
        ['zetaNotificationUrl', 'SETTLE_ZETA_URL', false],
      ],
    );
    assert.deepEqual(zeta.deploy, {
      variables: [
        { name: 'SETTLE_ZETA_KEYS', secret: true, required: true },
        { name: 'SETTLE_ZETA_URL', secret: false, required: true },
      ],
      files: [],
      egress: [],
    });
    assert.equal(zeta.webhookVariables, 'SETTLE_ZETA_KEYS with SETTLE_ZETA_URL');
  });

  test('keys take webhooks; keys without the URL it signs are refused, naming the URL', () => {
    const key = newHmacKey();
    assert.equal(zeta.takesWebhooks({ zetaKeys: [], zetaNotificationUrl: undefined }), false);
    assert.equal(zeta.takesWebhooks({ zetaKeys: [key], zetaNotificationUrl: URL }), true);
    assert.deepEqual(
      zeta.combinationIssues({ zetaKeys: [key], zetaNotificationUrl: undefined }).map((i) => i.variable),
      ['SETTLE_ZETA_URL'],
    );
    assert.deepEqual(zeta.combinationIssues({ zetaKeys: [key], zetaNotificationUrl: URL }), []);
  });

  test('its route: /openapi.json names the path and the header; the simulator signs what the route verifies', async () => {
    const path = zeta.openapi(parts)['/webhooks/zeta'] as {
      post: { operationId: string; parameters: { name: string; description: string }[] };
    };
    assert.equal(path.post.operationId, 'receiveZetaEvent');
    assert.equal(path.post.parameters[0]!.name, 'Zeta-Signature');
    assert.match(path.post.parameters[0]!.description, /SETTLE_ZETA_URL followed by the raw body/);

    const key = newHmacKey();
    const config = { zetaKeys: [key], zetaNotificationUrl: URL };
    const signer = zeta.simulator.signer(config, {});
    assert.ok(signer.ok);
    const event: PaymentEvent = {
      id: 'zeta:ev_1',
      type: 'payment.captured',
      created_at: '2026-09-21T10:00:00Z',
      data: { shipment_id: 'SHP-Z', payment_id: 'zp_1', amount: 4250, currency: 'EUR' },
    };
    const request = signer.sign(event);
    assert.equal(request.path, '/webhooks/zeta');
    assert.match(request.headers['zeta-signature']!, /^sha256=[0-9a-f]{64}$/);
    const adapter = zeta.webhookAdapter(config, {});
    const verified = await adapter.verify({ rawBody: request.body, headers: request.headers });
    assert.ok(verified.ok, JSON.stringify(verified));
    const adapted = adapter.adapt(verified.items[0]);
    assert.ok(adapted.kind === 'payment');
    assert.deepEqual(adapted.event.data.shipment_id, 'SHP-Z');

    const other = zeta.webhookAdapter({ zetaKeys: [newHmacKey()], zetaNotificationUrl: URL }, {});
    assert.equal((await other.verify({ rawBody: request.body, headers: request.headers })).ok, false);
    assert.match(
      (zeta.simulator.signer({ zetaKeys: [], zetaNotificationUrl: undefined }, {}) as { message: string })
        .message,
      /SETTLE_ZETA_KEYS with SETTLE_ZETA_URL/,
    );
  });
});

describe("Checkout.com's and Square's variables stop a start naming them", () => {
  const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };
  const refused = (env: NodeJS.ProcessEnv): string[] => {
    try {
      loadConfig({ ...base, ...env });
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.issues.map((issue) => issue.variable);
    }
    assert.fail('the configuration was accepted');
  };

  test('a weak key, a whsec_ secret, a URL that is none, keys without the URL', () => {
    assert.deepEqual(refused({ SETTLE_CHECKOUT_WEBHOOK_SECRETS: 'short-key' }), [
      'SETTLE_CHECKOUT_WEBHOOK_SECRETS',
    ]);
    assert.deepEqual(refused({ SETTLE_CHECKOUT_WEBHOOK_SECRETS: `whsec_${newHmacKey()}${newHmacKey()}` }), [
      'SETTLE_CHECKOUT_WEBHOOK_SECRETS',
    ]);
    assert.deepEqual(
      refused({ SETTLE_SQUARE_SIGNATURE_KEYS: newHmacKey(), SETTLE_SQUARE_NOTIFICATION_URL: 'not a url' }),
      ['SETTLE_SQUARE_NOTIFICATION_URL'],
    );
    assert.deepEqual(refused({ SETTLE_SQUARE_SIGNATURE_KEYS: newHmacKey() }), [
      'SETTLE_SQUARE_NOTIFICATION_URL',
    ]);
  });

  test('rotation: a comma-separated list, each key verifying', () => {
    const [current, next] = [newHmacKey(), newHmacKey()];
    const config = loadConfig({ ...base, SETTLE_CHECKOUT_WEBHOOK_SECRETS: `${current}, ${next}` });
    assert.deepEqual(config.checkoutKeys, [current, next]);
  });

  test('the gateway routes and /openapi.json have both', () => {
    const paths = openApiDocument.paths as Record<string, { post?: { parameters?: { name: string }[] } }>;
    assert.equal(paths['/webhooks/checkout']?.post?.parameters?.[0]?.name, 'Cko-Signature');
    assert.equal(paths['/webhooks/square']?.post?.parameters?.[0]?.name, 'x-square-hmacsha256-signature');
  });
});
