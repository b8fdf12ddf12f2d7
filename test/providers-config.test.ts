import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config';
import { startGateway } from '../src/gateway/run';
import { runSettle } from './support/settle-cli';
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

const ADYEN_KEY = newAdyenKey();

/** The ConfigError loadConfig throws for `env`, or a failure when it accepts it. */
function refusal(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('the configuration was accepted');
}

test('Adyen HMAC keys without basic auth are refused at start, naming the variables, unless opted out by name', async () => {
  const refused = refusal({ SETTLE_ADYEN_HMAC_KEYS: ADYEN_KEY });
  assert.deepEqual(
    refused.issues.map((issue) => issue.variable),
    ['SETTLE_ADYEN_BASIC_AUTH'],
  );
  assert.match(refused.message, /SETTLE_ADYEN_HMAC_KEYS/);
  assert.match(refused.message, /SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH=true/);
  // false is the default, and says the same.
  refusal({ SETTLE_ADYEN_HMAC_KEYS: ADYEN_KEY, SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH: 'false' });

  const optedOut = loadConfig({
    ...base,
    SETTLE_ADYEN_HMAC_KEYS: ADYEN_KEY,
    SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH: 'true',
  });
  assert.equal(optedOut.adyenAllowNoBasicAuth, true);
  assert.equal(optedOut.adyenBasicAuth, undefined);
  assert.equal(
    loadConfig({
      ...base,
      SETTLE_ADYEN_HMAC_KEYS: ADYEN_KEY,
      SETTLE_ADYEN_BASIC_AUTH: `adyen:${newStripeSecret()}`,
    }).adyenHmacKeys.length,
    1,
  );
  // No Adyen at all needs neither.
  assert.equal(loadConfig(base).adyenAllowNoBasicAuth, false);
  assert.equal(
    refusal({ SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH: 'yes' }).issues[0]?.variable,
    'SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH',
  );

  // A configuration built by other means is refused by the gateway's start all the same.
  await assert.rejects(
    startGateway({
      config: { ...optedOut, adyenAllowNoBasicAuth: false },
      pool: undefined as never,
      client: undefined as never,
    }),
    (error: unknown) => error instanceof ConfigError && /SETTLE_ADYEN_BASIC_AUTH/.test(error.message),
  );

  // The process itself: `settle gateway` stops before listening, naming the variables.
  const run = await runSettle(['gateway'], {
    ...base,
    SETTLE_WEBHOOK_SECRETS: '',
    SETTLE_ADYEN_BASIC_AUTH: '',
    SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH: '',
    SETTLE_ADYEN_HMAC_KEYS: ADYEN_KEY,
  });
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /SETTLE_ADYEN_BASIC_AUTH/);
  assert.match(run.stderr, /SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH/);
});

test('SETTLE_PROVIDER_MODE is live, test or unset; anything else stops the process naming it', () => {
  assert.equal(loadConfig(base).providerMode, undefined);
  assert.equal(loadConfig({ ...base, SETTLE_PROVIDER_MODE: 'live' }).providerMode, 'live');
  assert.equal(loadConfig({ ...base, SETTLE_PROVIDER_MODE: 'test' }).providerMode, 'test');
  for (const value of ['LIVE', 'production', 'true']) {
    const refused = refusal({ SETTLE_PROVIDER_MODE: value });
    assert.deepEqual(
      refused.issues.map((issue) => issue.variable),
      ['SETTLE_PROVIDER_MODE'],
    );
    assert.match(refused.message, /must be live or test/);
  }
});
