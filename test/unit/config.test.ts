/**
 * The configuration schema, without PostgreSQL or Temporal: defaults, a bad value named,
 * docs/configuration.md and .env.example in step with the schema, and development secrets only where they belong.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  ConfigError,
  configVariables,
  loadConfig,
  loadSettings,
  settingsVariables,
  TEMPORAL_SYSTEM_VARIABLES,
  TEMPORAL_VARIABLES,
  type Variable,
} from '../../src/config';
import { commandConfig, roleConfig } from '../../src/cli/context';
import { OUTBOX_TARGETS } from '../../src/domain/outbox';
import { loadOrCreateDevSecrets } from '../../src/config/dev-state';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { TRACING_VARIABLES } from '../../src/tracing/tracing';

// The dev-secrets cases below place `.settle/` in a folder of their own.
delete process.env.SETTLE_HOME;

const REQUIRED = {
  DATABASE_URL: 'postgres://settle@127.0.0.1:5432/settle',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
};
const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;
const load = (env: NodeJS.ProcessEnv) => loadConfig({ ...REQUIRED, ...env }, { temporal: 'dev-stack' });

/** The variables named by a ConfigError, or a failure when none was thrown. */
function rejected(fn: () => unknown): { variables: string[]; message: string } {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return { variables: error.issues.map((issue) => issue.variable), message: error.message };
  }
  assert.fail('the configuration was accepted');
}

describe('config schema', () => {
  test('defaults', () => {
    const config = load({});
    assert.equal(config.databaseUrl, REQUIRED.DATABASE_URL);
    assert.equal(config.temporalAddress, '127.0.0.1:7233');
    assert.equal(config.temporalNamespace, 'default');
    assert.equal(config.taskQueue, 'settle');
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.deepEqual(config.webhookSecrets, []);
    assert.deepEqual(config.stripeWebhookSecrets, []);
    assert.deepEqual(config.adyenHmacKeys, []);
    assert.equal(config.adyenBasicAuth, undefined);
    assert.deepEqual(config.outboundSecret, []);
    assert.deepEqual(config.carrierSecret, []);
    assert.deepEqual(config.erpSecret, []);
    assert.equal(config.apiToken, undefined);
    assert.equal(config.carrierUrl, undefined);
    assert.equal(config.erpUrl, undefined);
    assert.equal(config.claimRetentionMs, 90 * 86_400_000);
    assert.equal(config.deliveryStuckAfterMs, 5 * 60_000);
    // Each delivery target's limits: none unless set, open after a minute of failures.
    assert.equal(config.erpRateLimit, undefined);
    assert.equal(config.carrierMaxInFlight, undefined);
    assert.equal(config.erpOpenAfterMs, 60_000);
    assert.equal(config.allowPrivateTargets, false);
    assert.equal(config.metricsPort, 9464);
    assert.equal(config.maxCachedWorkflows, 250);

    const settings = loadSettings({});
    assert.equal(settings.logLevel, 'info');
    assert.equal(settings.logFile, undefined);
    assert.equal(settings.temporalLogLevel, 'WARN');
    assert.equal(settings.home, undefined);
    assert.equal(settings.gatewayUrl, undefined);
    assert.equal(settings.devPostgresPort, 5433);
    assert.equal(settings.devTemporalPort, 7233);
    assert.equal(settings.devTemporalUiPort, 8233);
    assert.equal(settings.devDownstreamPort, 8234);
  });

  test('values are parsed; an empty variable is an unset one', () => {
    const [first, second] = [whsec(), whsec()];
    const config = load({
      SETTLE_TASK_QUEUE: 'payments',
      PORT: '9090',
      SETTLE_WEBHOOK_SECRETS: ` ${first} , ${second}`,
      SETTLE_CLAIM_RETENTION: '36h',
      SETTLE_ALLOW_PRIVATE_TARGETS: '1',
      SETTLE_MAX_CACHED_WORKFLOWS: '40',
      HOST: '',
      SETTLE_DELIVERY_STUCK_AFTER: '',
      SETTLE_CARRIER_RATE_LIMIT: '2.5',
      SETTLE_ERP_MAX_IN_FLIGHT: '8',
      SETTLE_CARRIER_OPEN_AFTER: '30s',
      SETTLE_ERP_RATE_LIMIT: '',
    });
    assert.equal(config.taskQueue, 'payments');
    assert.equal(config.port, 9090);
    assert.deepEqual(config.webhookSecrets, [first, second]);
    assert.equal(config.claimRetentionMs, 36 * 3_600_000);
    assert.equal(config.allowPrivateTargets, true);
    assert.equal(config.maxCachedWorkflows, 40);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.deliveryStuckAfterMs, 5 * 60_000);
    assert.equal(config.carrierRateLimit, 2.5);
    assert.equal(config.erpMaxInFlight, 8);
    assert.equal(config.carrierOpenAfterMs, 30_000);
    assert.equal(config.erpRateLimit, undefined);
    assert.equal(loadSettings({ SETTLE_TEMPORAL_LOG_LEVEL: 'debug' }).temporalLogLevel, 'DEBUG');
    assert.equal(loadSettings({ SETTLE_LOG_LEVEL: '' }).logLevel, 'info');
  });

  const BAD: [string, string][] = [
    ['TEMPORAL_ADDRESS', 'localhost'],
    ['HOST', 'two words'],
    ['PORT', '70000'],
    ['PORT', 'eighty'],
    ['SETTLE_WEBHOOK_SECRETS', 'not-a-secret'],
    ['SETTLE_STRIPE_WEBHOOK_SECRETS', 'sk_live_123'],
    ['SETTLE_ADYEN_HMAC_KEYS', 'zz'],
    ['SETTLE_ADYEN_BASIC_AUTH', 'nopassword'],
    ['SETTLE_OUTBOUND_SECRET', 'secret'],
    ['SETTLE_API_TOKEN', 'short'],
    ['SETTLE_CARRIER_URL', 'ftp://carrier.example/holds'],
    ['SETTLE_ERP_URL', 'not a url'],
    ['SETTLE_CLAIM_RETENTION', 'forever'],
    ['SETTLE_DELIVERY_STUCK_AFTER', '5 minutes'],
    ['SETTLE_ALLOW_PRIVATE_TARGETS', 'yes'],
    ['SETTLE_METRICS_PORT', '-1'],
    ['SETTLE_MAX_CACHED_WORKFLOWS', '1'],
    ['SETTLE_BULK_CONCURRENCY', '0'],
    ['SETTLE_BULK_CONCURRENCY', '101'],
    ['SETTLE_ERP_RATE_LIMIT', '0'],
    ['SETTLE_ERP_RATE_LIMIT', 'fast'],
    ['SETTLE_CARRIER_MAX_IN_FLIGHT', '0'],
    ['SETTLE_CARRIER_MAX_IN_FLIGHT', '2.5'],
    ['SETTLE_ERP_OPEN_AFTER', '0s'],
    ['SETTLE_CARRIER_OPEN_AFTER', 'soon'],
    ['SETTLE_LOG_LEVEL', 'loud'],
    ['SETTLE_TEMPORAL_LOG_LEVEL', 'chatty'],
    ['SETTLE_GATEWAY_URL', 'gateway:8080'],
    ['SETTLE_DEV_POSTGRES_PORT', '0'],
    ['SETTLE_DEV_TEMPORAL_PORT', 'x'],
    ['SETTLE_DEV_TEMPORAL_UI_PORT', '65536'],
    ['SETTLE_DEV_DOWNSTREAM_PORT', '1.5'],
  ];
  for (const [variable, value] of BAD) {
    test(`${variable}=${value} stops the start, naming ${variable}`, () => {
      const { variables, message } = rejected(() => load({ [variable]: value }));
      assert.deepEqual(variables, [variable]);
      assert.match(message, new RegExp(`^  ${variable}: \\S`, 'm'));
    });
  }

  test('a process setting is refused before the rest of the configuration is read', () => {
    assert.deepEqual(rejected(() => loadSettings({ SETTLE_LOG_LEVEL: 'loud' })).variables, [
      'SETTLE_LOG_LEVEL',
    ]);
  });

  test('every missing or bad variable is named at once; a missing one as not set', () => {
    const { variables, message } = rejected(() =>
      loadConfig({ PORT: 'x', SETTLE_LOG_LEVEL: 'loud' }, { temporal: 'dev-stack' }),
    );
    assert.deepEqual(variables.sort(), ['DATABASE_URL', 'PORT', 'SETTLE_LOG_LEVEL', 'TEMPORAL_ADDRESS']);
    assert.match(message, /^ {2}DATABASE_URL: is not set$/m);
  });
});

/** Where the variables are listed: the agreement below follows it. */
const CONFIGURATION_DOC = 'docs/configuration.md';

/** docs/configuration.md's table ("Variables"): each variable with its default cell. */
function configurationTable(): { doc: string; defaults: Map<string, string> } {
  const doc = readFileSync(join(PROJECT_ROOT, CONFIGURATION_DOC), 'utf8');
  const start = doc.indexOf('\n## Variables');
  assert.ok(start >= 0, `${CONFIGURATION_DOC} has no "## Variables" section`);
  const section = doc.slice(start);
  const table = section.slice(0, section.indexOf('\n## ', 1));
  const defaults = new Map<string, string>();
  for (const line of table.split('\n').filter((row) => row.startsWith('| `'))) {
    const [names = '', defaultCell = ''] = line.split('|').slice(1);
    let previous = '';
    for (const [, token] of names.matchAll(/`([A-Z_][A-Z0-9_<>]*)`/g)) {
      // `TEMPORAL_TLS_CLIENT_CERT_PATH` / `_DATA`: the suffix replaces the previous one's.
      const name = token!.startsWith('_') ? previous.replace(/_[A-Z]+$/, token!) : token!;
      // `SETTLE_<TARGET>_URL`: one variable per delivery target (src/domain/outbox.ts).
      const expanded = name.includes('<TARGET>')
        ? OUTBOX_TARGETS.map((target) => name.replace('<TARGET>', target.toUpperCase()))
        : [name];
      for (const each of expanded) defaults.set(each, defaultCell.trim());
      previous = name;
    }
  }
  return { doc, defaults };
}

/** .env.example's variables and their example values (a commented `NAME=` line counts). */
function envExample(): Map<string, string> {
  const text = readFileSync(join(PROJECT_ROOT, '.env.example'), 'utf8');
  return new Map(
    [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*(?:<NAME>)?)=(.*)$/gm)].map(([, name, value]) => [
      name!,
      value!.trim(),
    ]),
  );
}

describe('config documentation', () => {
  const all: Variable[] = [...Object.values(settingsVariables), ...Object.values(configVariables)];
  const operatorSet = all.filter((v) => !v.system).map((v) => v.name);
  const documented = [...new Set([...operatorSet, ...TEMPORAL_VARIABLES, ...TRACING_VARIABLES])];

  test(`every variable is in ${CONFIGURATION_DOC}'s table and in .env.example, and nothing else is`, () => {
    const { defaults } = configurationTable();
    const example = envExample();
    assert.deepEqual(
      documented.filter((name) => !defaults.has(name)),
      [],
      `missing from the table of ${CONFIGURATION_DOC}`,
    );
    assert.deepEqual(
      documented.filter((name) => !example.has(name)),
      [],
      'missing from .env.example',
    );
    assert.deepEqual(
      [...defaults.keys()].filter((name) => !documented.includes(name)),
      [],
      `unknown in ${CONFIGURATION_DOC}`,
    );
    assert.deepEqual(
      [...example.keys()].filter((name) => !documented.includes(name)),
      [],
      'unknown in .env.example',
    );
  });

  test(`each default is the one ${CONFIGURATION_DOC} shows and .env.example sets`, () => {
    const { defaults } = configurationTable();
    const example = envExample();
    for (const v of all.filter((v) => v.default !== undefined && !v.system)) {
      assert.ok(
        defaults.get(v.name)?.includes(`\`${v.default}\``),
        `${CONFIGURATION_DOC}: ${v.name} defaults to ${v.default}`,
      );
      assert.equal(example.get(v.name), v.default, `.env.example: ${v.name}`);
    }
  });

  test(`the system variables settle reads are named in ${CONFIGURATION_DOC}`, () => {
    const { doc } = configurationTable();
    const system = [...all.filter((v) => v.system).map((v) => v.name), ...TEMPORAL_SYSTEM_VARIABLES];
    for (const name of system)
      assert.ok(doc.includes(`\`${name}\``), `${name} is not in ${CONFIGURATION_DOC}`);
  });
});

describe('SETTLE_REMINDER_SECRET', () => {
  test("shares no secret with the carrier's and the ERP's: refused at start naming it, never printing it", () => {
    const [outbound, carrier, erp] = [whsec(), whsec(), whsec()];
    for (const [shared, env] of [
      [
        'SETTLE_OUTBOUND_SECRET',
        { SETTLE_OUTBOUND_SECRET: outbound, SETTLE_REMINDER_SECRET: `${whsec()},${outbound}` },
      ],
      [
        'SETTLE_CARRIER_SECRET',
        { SETTLE_CARRIER_SECRET: `${whsec()},${carrier}`, SETTLE_REMINDER_SECRET: carrier },
      ],
      ['SETTLE_ERP_SECRET', { SETTLE_ERP_SECRET: erp, SETTLE_REMINDER_SECRET: erp }],
    ] as const) {
      const { variables, message } = rejected(() => load(env));
      assert.deepEqual(variables, ['SETTLE_REMINDER_SECRET']);
      assert.match(message, new RegExp(`shares a secret with ${shared}`));
      assert.ok(![outbound, carrier, erp].some((secret) => message.includes(secret)));
    }
    const own = whsec();
    assert.deepEqual(load({ SETTLE_OUTBOUND_SECRET: outbound, SETTLE_REMINDER_SECRET: own }).reminderSecret, [
      own,
    ]);
    assert.deepEqual(load({}).reminderSecret, []);
  });

  test('npm start generates one of its own, kept with the other development secrets', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'settle-config-'));
    const first = loadOrCreateDevSecrets(cwd);
    assert.match(first.reminderSecret, /^whsec_/);
    assert.notEqual(first.reminderSecret, first.outboundSecret);
    assert.equal(loadOrCreateDevSecrets(cwd).reminderSecret, first.reminderSecret);
    // A file from an older settle, without it: one is added, the others kept.
    const older = mkdtempSync(join(tmpdir(), 'settle-config-'));
    mkdirSync(join(older, '.settle'));
    const before: Partial<typeof first> = { ...first };
    delete before.reminderSecret;
    writeFileSync(join(older, '.settle', 'dev-secrets.json'), JSON.stringify(before));
    const upgraded = loadOrCreateDevSecrets(older);
    assert.equal(upgraded.outboundSecret, first.outboundSecret);
    assert.match(upgraded.reminderSecret, /^whsec_/);
    load({
      SETTLE_OUTBOUND_SECRET: upgraded.outboundSecret,
      SETTLE_REMINDER_SECRET: upgraded.reminderSecret,
    });
  });
});

describe('development secrets', () => {
  const secrets = {
    webhookSecret: whsec(),
    apiToken: randomBytes(24).toString('hex'),
    outboundSecret: whsec(),
  };
  const folder = () => {
    const cwd = mkdtempSync(join(tmpdir(), 'settle-config-'));
    mkdirSync(join(cwd, '.settle'));
    writeFileSync(join(cwd, '.settle', 'dev-secrets.json'), JSON.stringify(secrets));
    return cwd;
  };

  test('settle worker and settle gateway never take them', () => {
    const cwd = folder();
    const previous = process.cwd();
    process.chdir(cwd);
    try {
      const config = roleConfig(REQUIRED);
      assert.deepEqual(config.webhookSecrets, []);
      assert.equal(config.apiToken, undefined);
      assert.deepEqual(config.outboundSecret, []);
    } finally {
      process.chdir(previous);
    }
  });

  test('operator commands do not take them; example and simulate do, where a secret is unset', () => {
    const cwd = folder();
    const plain = commandConfig({ env: REQUIRED, cwd }).config;
    assert.deepEqual(plain.webhookSecrets, []);
    assert.equal(plain.apiToken, undefined);
    assert.deepEqual(plain.outboundSecret, []);

    const dev = commandConfig({ env: REQUIRED, cwd, devSecrets: true }).config;
    assert.deepEqual(dev.webhookSecrets, [secrets.webhookSecret]);
    assert.equal(dev.apiToken, secrets.apiToken);
    assert.deepEqual(dev.outboundSecret, [secrets.outboundSecret]);

    const own = whsec();
    const set = commandConfig({ env: { ...REQUIRED, SETTLE_WEBHOOK_SECRETS: own }, cwd, devSecrets: true });
    assert.deepEqual(set.config.webhookSecrets, [own]);
  });
});
