import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config';

const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: 'localhost:7233' };
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env }, { temporal: 'dev-stack' });

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  return assert.fail('no ConfigError');
}

describe('the recovery sweep configuration', () => {
  test('defaults: no key (no sweep), Stripe’s API, every 15 minutes', () => {
    const config = load({});
    assert.equal(config.stripeApiKey, undefined);
    assert.equal(config.stripeApiBase, 'https://api.stripe.com');
    assert.equal(config.stripeSweepEveryMs, 15 * 60_000);
  });

  test('a bad value stops the start naming the variable', () => {
    assert.match(
      refusal(() => load({ SETTLE_STRIPE_API_KEY: 'pk_live_123456789' })),
      /SETTLE_STRIPE_API_KEY: /,
    );
    assert.match(
      refusal(() => load({ SETTLE_STRIPE_API_BASE: 'http://127.0.0.1:1234/v1' })),
      /SETTLE_STRIPE_API_BASE: must be scheme:\/\/host\[:port\]/,
    );
    assert.match(
      refusal(() => load({ SETTLE_STRIPE_SWEEP_EVERY: '10s' })),
      /SETTLE_STRIPE_SWEEP_EVERY: must be at least 1m/,
    );
    assert.match(
      refusal(() => load({ SETTLE_STRIPE_SWEEP_EVERY: 'often' })),
      /SETTLE_STRIPE_SWEEP_EVERY: must be a duration/,
    );
  });
});
