import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config';
import { configVariables } from '../../src/config/schema';
import { GENERATED_CHECKS } from '../../src/db/generated-checks';
import { openApiDocument } from '../../src/gateway/openapi';
import { missingWebhookSecrets } from '../../src/gateway/run';
import { webhooksTotal } from '../../src/metrics/settle-metrics';
import { PROVIDER_CONFIGURATION } from '../../src/providers/registry-configuration';
import type { ProviderModule } from '../../src/providers/module';
import { PROVIDER_NAMES, PROVIDERS, RECOVERY_PROVIDER_NAMES } from '../../src/providers/registry';
import { newAdyenKey, newHmacKey, newStripeSecret } from '../support/providers';

const base = { DATABASE_URL: 'postgres://localhost/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };

/** Each provider's webhook credentials, and nothing else: what an operator of that provider alone sets. */
const ALONE: Record<string, NodeJS.ProcessEnv> = {
  stripe: { SETTLE_STRIPE_WEBHOOK_SECRETS: newStripeSecret() },
  adyen: { SETTLE_ADYEN_HMAC_KEYS: newAdyenKey(), SETTLE_ADYEN_BASIC_AUTH: `adyen:${newStripeSecret()}` },
  paypal: { SETTLE_PAYPAL_WEBHOOK_ID: '7PA52781JU389440W' },
  checkout: { SETTLE_CHECKOUT_WEBHOOK_SECRETS: newHmacKey() },
  square: {
    SETTLE_SQUARE_SIGNATURE_KEYS: newHmacKey(),
    SETTLE_SQUARE_NOTIFICATION_URL: 'https://settle.example.com/webhooks/square',
  },
};

const modules = PROVIDER_NAMES.map((name) => [name, PROVIDERS[name] as ProviderModule] as const);

describe("the providers' table drives every surface", () => {
  test('each entry is its own name, and the configuration reads the same providers and variables', () => {
    assert.deepEqual(Object.keys(PROVIDER_CONFIGURATION), PROVIDER_NAMES);
    for (const [name, module] of modules) {
      assert.equal(module.name, name);
      assert.equal(module.variables, PROVIDER_CONFIGURATION[name].variables, name);
    }
  });

  test("every provider's route is in /openapi.json, and in the webhook metric's help", () => {
    const paths = openApiDocument.paths as Record<string, { post?: unknown }>;
    const help = (webhooksTotal as unknown as { help: string }).help;
    for (const [name] of modules) {
      assert.ok(paths[`/webhooks/${name}`]?.post, `/webhooks/${name} in /openapi.json`);
      assert.ok(help.includes(`/webhooks/${name}`), `/webhooks/${name} in settle_webhooks_total's help`);
    }
  });

  test('every provider variable is in the configuration schema, and its deploy needs list each, secret as declared', () => {
    const declared = new Map(Object.values(configVariables).map((variable) => [variable.name, variable]));
    for (const [name, module] of modules) {
      const own = Object.values(module.variables);
      for (const variable of own) assert.equal(declared.get(variable.name), variable, variable.name);
      assert.deepEqual(
        module.deploy.variables.map((variable) => [variable.name, variable.secret]).sort(),
        own.map((variable) => [variable.name, variable.secret === true]).sort(),
        `${name}: deploy.variables`,
      );
      for (const file of module.deploy.files) {
        assert.ok(
          own.some((variable) => variable.name === file.variable),
          `${name}: ${file.variable}`,
        );
      }
      for (const egress of module.deploy.egress) {
        assert.ok(egress.host && egress.port > 0 && egress.when, `${name}: egress ${egress.host}`);
      }
    }
  });

  test('a gateway configured for any one provider alone has a webhook it can verify', () => {
    assert.deepEqual(Object.keys(ALONE).sort(), [...PROVIDER_NAMES].sort());
    for (const [name, env] of Object.entries(ALONE)) {
      const config = loadConfig({ ...base, ...env });
      assert.deepEqual(config.webhookSecrets, []);
      assert.equal(missingWebhookSecrets(config), undefined, name);
    }
    assert.match(missingWebhookSecrets(loadConfig(base)) ?? '', /SETTLE_WEBHOOK_SECRETS is not set/);
  });

  test("the provider columns' CHECKs are generated from the table: a new provider needs no migration", () => {
    for (const table of ['provider_exceptions', 'recovery_cursors']) {
      const check = GENERATED_CHECKS.find((c) => c.table === table && c.column === 'provider');
      assert.deepEqual(check?.values, PROVIDER_NAMES, table);
    }
  });

  test('the providers with a recovery source are the ones with an events API', () => {
    assert.deepEqual(
      RECOVERY_PROVIDER_NAMES,
      modules.filter(([, module]) => module.recovery !== undefined).map(([name]) => name),
    );
  });
});
