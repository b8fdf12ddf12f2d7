import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config';

const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };

test('provider settings: lists are split on commas, and a bad value stops the process naming the variable', () => {
  const config = loadConfig({
    ...base,
    SETTLE_STRIPE_WEBHOOK_SECRETS: 'whsec_newSecret0123456789, whsec_oldSecret0123456789',
    SETTLE_ADYEN_HMAC_KEYS: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
    SETTLE_ADYEN_BASIC_AUTH: 'adyen:secret password',
  });
  assert.deepEqual(config.stripeWebhookSecrets, ['whsec_newSecret0123456789', 'whsec_oldSecret0123456789']);
  assert.equal(config.adyenHmacKeys?.length, 1);
  assert.equal(config.adyenBasicAuth, 'adyen:secret password');

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
