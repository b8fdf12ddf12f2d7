import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config';
import { newAdyenKey, newStripeSecret } from './support/providers';

const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };

test('provider settings: lists are split on commas, and a bad value stops the process naming the variable', () => {
  const [newer, older] = [newStripeSecret(), newStripeSecret()];
  const config = loadConfig({
    ...base,
    SETTLE_STRIPE_WEBHOOK_SECRETS: `${newer}, ${older}`,
    SETTLE_ADYEN_HMAC_KEYS: newAdyenKey(),
    SETTLE_ADYEN_BASIC_AUTH: 'adyen:correct horse battery staple',
  });
  assert.deepEqual(config.stripeWebhookSecrets, [newer, older]);
  assert.equal(config.adyenHmacKeys?.length, 1);
  assert.equal(config.adyenBasicAuth, 'adyen:correct horse battery staple');

  const unset = loadConfig(base);
  assert.deepEqual(unset.stripeWebhookSecrets, []);
  assert.deepEqual(unset.adyenHmacKeys, []);
  assert.equal(unset.adyenBasicAuth, undefined);

  for (const [variable, value] of [
    ['SETTLE_STRIPE_WEBHOOK_SECRETS', 'sk_live_not_a_webhook_secret'],
    ['SETTLE_ADYEN_HMAC_KEYS', 'not-hex'],
    ['SETTLE_ADYEN_BASIC_AUTH', 'no-colon'],
  ] as const) {
    assert.throws(
      () => loadConfig({ ...base, [variable]: value }),
      (error: unknown) =>
        error instanceof ConfigError && error.issues.some((issue) => issue.variable === variable),
      variable,
    );
  }
});
