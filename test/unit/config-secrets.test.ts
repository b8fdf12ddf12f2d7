/**
 * Secret variables (docs/configuration.md, "Secrets"): each can be read from <NAME>_FILE, each has a minimum
 * strength, and no value published in the repository's documentation is accepted. Every table here is
 * built from the schema (`secret: true`), so a secret variable added later is covered without an edit.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import {
  ConfigError,
  configVariables,
  EXAMPLE_SECRETS,
  loadConfig,
  secretFileVariable,
} from '../../src/config';
import { OUTBOX_TARGETS, targetSecretKey, targetSecretVariable } from '../../src/domain/outbox';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { SECRET_MIN_DISTINCT, varied } from '../../src/config/secret-strength';

const REQUIRED = {
  DATABASE_URL: 'postgres://settle@127.0.0.1:5432/settle',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  // Adyen HMAC keys alone are refused without basic auth (providers-config tests that); here each
  // secret is tried on its own.
  SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH: 'true',
  // Square's keys are refused without the URL Square signs.
  SETTLE_SQUARE_NOTIFICATION_URL: 'https://settle.example.com/webhooks/square',
};
/** loadConfig with the required variables filled in (DATABASE_URL unless its file form is set). */
const load = (env: Record<string, string>) =>
  loadConfig(
    { ...REQUIRED, ...(env.DATABASE_URL_FILE ? { DATABASE_URL: '' } : {}), ...env },
    { temporal: 'dev-stack' },
  );

const SECRETS = Object.entries(configVariables)
  .filter(([, v]) => v.secret)
  .map(([key, v]) => ({ key: key as keyof typeof configVariables, name: v.name }));

/** A connection string holds the database's password, which PostgreSQL itself judges: no strength rule. */
const NO_STRENGTH_RULE = new Set(['DATABASE_URL']);

/** The ConfigError's issues, or a failure when the configuration was accepted. */
function refusal(env: Record<string, string>): { issues: ConfigError['issues']; message: string } {
  try {
    load(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return { issues: error.issues, message: error.message };
  }
  assert.fail(`accepted: ${Object.keys(env).join(', ')}`);
}

/** Strong values of each form settle knows; a secret variable takes (at least) one of them. */
const strongCandidates = () => [
  `whsec_${randomBytes(32).toString('base64')}`,
  `rk_test_${randomBytes(24).toString('hex')}`,
  `whsec_${randomBytes(24).toString('hex')}`,
  randomBytes(32).toString('hex').toUpperCase(),
  randomBytes(24).toString('hex'),
  `notifications:${randomBytes(16).toString('hex')}`,
  `k-${randomBytes(3).toString('hex')}:${randomBytes(32).toString('base64')}`,
  `postgres://settle:${randomBytes(16).toString('hex')}@127.0.0.1:5432/settle`,
  // An HMAC provider's key (Square's signature key: 16 bytes, base64url).
  randomBytes(16).toString('base64url'),
];

/** A strong value the variable accepts, and what it parses to. */
function strongValue(name: string, key: keyof typeof configVariables): { value: string; parsed: unknown } {
  for (const value of strongCandidates()) {
    try {
      return { value, parsed: load({ [name]: value })[key] };
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
    }
  }
  assert.fail(`${name}: no strong value of a known form is accepted; add its form to strongCandidates`);
}

const scratch = () => mkdtempSync(join(tmpdir(), 'settle-secret-file-'));

describe('<NAME>_FILE, for every secret variable', () => {
  test('the schema marks the secrets docs/configuration.md lists', () => {
    assert.deepEqual(
      SECRETS.map((s) => s.name).sort(),
      [
        'DATABASE_URL',
        'SETTLE_ADYEN_BASIC_AUTH',
        'SETTLE_ADYEN_HMAC_KEYS',
        'SETTLE_API_TOKEN',
        'SETTLE_CHECKOUT_WEBHOOK_SECRETS',
        'SETTLE_CODEC_TOKEN',
        'SETTLE_OUTBOUND_SECRET',
        'SETTLE_PAYLOAD_KEYS',
        'SETTLE_PAYPAL_CLIENT_SECRET',
        'SETTLE_REMINDER_SECRET',
        'SETTLE_SQUARE_SIGNATURE_KEYS',
        'SETTLE_STRIPE_API_KEY',
        'SETTLE_STRIPE_WEBHOOK_SECRETS',
        'SETTLE_WEBHOOK_SECRETS',
        // Each delivery target's own (SETTLE_CARRIER_SECRET, SETTLE_ERP_SECRET).
        ...OUTBOX_TARGETS.map(targetSecretVariable),
      ]
        .filter((name) => SECRETS.some((s) => s.name === name))
        .sort(),
    );
    const doc = readFileSync(join(PROJECT_ROOT, 'docs/configuration.md'), 'utf8');
    const start = doc.indexOf('\n## Secrets');
    assert.ok(start >= 0, 'docs/configuration.md has no "## Secrets" section');
    const end = doc.indexOf('\n## ', start + 1);
    const section = doc.slice(start, end < 0 ? undefined : end);
    // The targets' own secrets are named once for all of them: `SETTLE_<TARGET>_SECRET`.
    const targetSecrets: string[] = OUTBOX_TARGETS.map(targetSecretVariable);
    for (const { name } of SECRETS) {
      const written = targetSecrets.includes(name) ? 'SETTLE_<TARGET>_SECRET' : name;
      assert.ok(section.includes(`\`${written}\``), `docs/configuration.md, "Secrets": ${written}`);
    }
  });

  test("each delivery target's signing secret variable comes from the target table", () => {
    for (const target of OUTBOX_TARGETS) {
      const v = configVariables[targetSecretKey(target)];
      assert.equal(v.name, targetSecretVariable(target));
      assert.equal(v.secret, true, `${v.name} is a secret`);
    }
  });

  for (const { key, name } of SECRETS) {
    const fileVariable = secretFileVariable(name);
    test(`${fileVariable}: read as ${name} is; both set, or unreadable, is refused naming ${fileVariable}`, () => {
      const dir = scratch();
      const { value, parsed } = strongValue(name, key);
      const file = join(dir, name);
      writeFileSync(file, `${value}\n`);
      assert.deepEqual(load({ [fileVariable]: file })[key], parsed, 'the file gives what the variable does');

      const empty = join(dir, 'empty');
      writeFileSync(empty, '\n');
      // An empty file is an unset variable: a required one is refused as such.
      const unset = (env: Record<string, string>) => {
        try {
          return { value: load(env)[key] };
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error;
          return { refused: error.issues.map((issue) => issue.message) };
        }
      };
      const fromEmpty = unset({ [fileVariable]: empty });
      const asUnset = unset({ [name]: '' });
      if ('value' in asUnset) assert.deepEqual(fromEmpty, asUnset, 'an empty file is unset');
      else assert.deepEqual(fromEmpty, { refused: ['is an empty file'] });

      const both = refusal({ [fileVariable]: file, [name]: value });
      assert.deepEqual(
        both.issues.map((issue) => issue.variable),
        [fileVariable],
      );
      assert.match(both.message, new RegExp(`${fileVariable}: is set together with ${name}`));

      const missing = refusal({ [fileVariable]: join(dir, 'missing') });
      assert.deepEqual(
        missing.issues.map((issue) => issue.variable),
        [fileVariable],
      );
      assert.match(missing.message, /cannot be read: ENOENT/);

      for (const message of [both.message, missing.message]) assert.ok(!message.includes(value));
    });

    if (NO_STRENGTH_RULE.has(name)) continue;
    test(`${fileVariable} holding a weak value is refused naming the file, never printing it`, () => {
      const weak = join(scratch(), 'weak');
      writeFileSync(weak, 'weak-value-1234');
      const { issues, message } = refusal({ [fileVariable]: weak });
      assert.deepEqual(
        issues.map((issue) => issue.variable),
        [`${fileVariable} (${weak})`],
      );
      assert.ok(!message.includes('weak-value-1234'));
    });
  }
});

describe('a minimum strength for every secret', () => {
  const weakForAll = [
    'weak-value-1234',
    'a'.repeat(64),
    `whsec_${randomBytes(16).toString('base64')}`,
    `${randomBytes(8).toString('hex')}`,
  ];
  for (const { name } of SECRETS.filter((s) => !NO_STRENGTH_RULE.has(s.name))) {
    test(`${name}: a weak value is refused naming it, never printing it`, () => {
      for (const value of weakForAll) {
        const { issues, message } = refusal({ [name]: value });
        assert.deepEqual(
          issues.map((issue) => issue.variable),
          [name],
          value,
        );
        assert.ok(!message.includes(value), `${name}'s message prints the value`);
      }
    });
  }

  const whsec = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;
  /**
   * `length` random hex characters, drawn again until at least SECRET_MIN_DISTINCT of them differ: 16
   * random hex characters have fewer about once in a hundred draws, which the strength rule rightly
   * refuses, so a `strong` value must not leave that to chance (each `weak` one is weak for another
   * reason: its length, a space, no user).
   */
  const token = (length: number): string => {
    const drawn = randomBytes(length).toString('hex').slice(0, length);
    return varied(drawn) || length < SECRET_MIN_DISTINCT ? drawn : token(length);
  };
  const payloadKey = (bytes: Buffer, id = 'k1') => `${id}:${bytes.toString('base64')}`;
  const EDGES: { name: string; weak: string[]; strong: string[] }[] = [
    ...[
      'SETTLE_WEBHOOK_SECRETS',
      'SETTLE_OUTBOUND_SECRET',
      ...OUTBOX_TARGETS.map(targetSecretVariable),
      'SETTLE_REMINDER_SECRET',
    ].map((name) => ({
      name,
      weak: [whsec(23), `${whsec(32)},${whsec(23)}`, 'whsec_not*base64*at*all*but*long*enough'],
      strong: [whsec(24), `${whsec(32)},${whsec(24)}`],
    })),
    {
      name: 'SETTLE_STRIPE_WEBHOOK_SECRETS',
      weak: [`whsec_${token(23)}`, `sk_live_${token(40)}`],
      strong: [`whsec_${token(24)}`, `whsec_${token(64)}`],
    },
    {
      name: 'SETTLE_ADYEN_HMAC_KEYS',
      weak: [token(62), token(66), token(32)],
      strong: [token(64), token(64).toUpperCase()],
    },
    {
      name: 'SETTLE_ADYEN_BASIC_AUTH',
      weak: [`adyen:${token(15)}`, token(40), `:${token(20)}`],
      strong: [`adyen:${token(16)}`],
    },
    {
      // Each key's 32 bytes: a repeated pattern (all zeros, `abab…`, seven values cycled) is refused
      // as a token's characters are, alone or second in a rotation list.
      name: 'SETTLE_PAYLOAD_KEYS',
      weak: [
        payloadKey(Buffer.alloc(32)),
        payloadKey(Buffer.from('ab'.repeat(16))),
        payloadKey(Buffer.from(Array.from({ length: 32 }, (_, i) => i % 7))),
        `${payloadKey(randomBytes(32))},${payloadKey(Buffer.alloc(32, 0xff), 'k2')}`,
      ],
      strong: [
        payloadKey(randomBytes(32)),
        payloadKey(Buffer.from(Array.from({ length: 32 }, (_, i) => i % 8))),
        `${payloadKey(randomBytes(32))},${payloadKey(randomBytes(32), 'k2')}`,
      ],
    },
    ...['SETTLE_API_TOKEN', 'SETTLE_CODEC_TOKEN'].map((name) => ({
      name,
      weak: [token(31), 'ab'.repeat(20), '0123456'.repeat(6), `${token(20)} ${token(20)}`],
      strong: [token(32), token(48), randomBytes(32).toString('base64url')],
    })),
  ];
  for (const { name, weak, strong } of EDGES) {
    test(`${name}: the documented minimum, on both sides`, () => {
      for (const value of weak) {
        assert.deepEqual(
          refusal({ [name]: value }).issues.map((issue) => issue.variable),
          [name],
          value,
        );
      }
      for (const value of strong) load({ [name]: value });
    });
  }
});

/** Files a reader copies values from: .env.example, the README, docs/ and the manifests' examples. */
function documentationFiles(): string[] {
  const files = ['.env.example', 'README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(PROJECT_ROOT, dir))) {
      const path = join(dir, entry);
      if (entry === 'bench-results' || entry === 'node_modules') continue;
      if (statSync(join(PROJECT_ROOT, path)).isDirectory()) walk(path);
      else if (/\.(md|ya?ml|example|env)$/.test(entry)) files.push(path);
    }
  };
  walk('docs');
  walk('deploy');
  return files;
}

/** A placeholder, not a value: empty, elided (…), a shell expansion, or a <slot>. */
const placeholder = (value: string) => value === '' || /[…$<>{}]|\.\.\./.test(value);

/** Each secret-looking value of the documentation, with the variables that must refuse it. */
function documentedSecrets(): { where: string; value: string; variables: string[] }[] {
  const found: { where: string; value: string; variables: string[] }[] = [];
  const whsecVariables = SECRETS.map((s) => s.name).filter((name) =>
    [
      'SETTLE_WEBHOOK_SECRETS',
      'SETTLE_STRIPE_WEBHOOK_SECRETS',
      'SETTLE_OUTBOUND_SECRET',
      'SETTLE_REMINDER_SECRET',
    ].includes(name),
  );
  for (const file of documentationFiles()) {
    const lines = readFileSync(join(PROJECT_ROOT, file), 'utf8').split('\n');
    lines.forEach((line, index) => {
      const where = `${relative('.', file)}:${index + 1}`;
      for (const { name } of SECRETS.filter((s) => !NO_STRENGTH_RULE.has(s.name))) {
        const assignment = new RegExp(`\\b${name}\\s*[=:]\\s*["']?([^\\s"'\`]*)`, 'g');
        for (const [, value = ''] of line.matchAll(assignment)) {
          if (!placeholder(value)) found.push({ where, value, variables: [name] });
        }
      }
      for (const [value] of line.matchAll(/\bwhsec_[A-Za-z0-9+/=_]{6,}/g)) {
        found.push({ where, value, variables: whsecVariables });
      }
      for (const [value] of line.matchAll(/\b[0-9A-Fa-f]{64}\b/g)) {
        found.push({ where, value, variables: ['SETTLE_ADYEN_HMAC_KEYS'] });
      }
    });
  }
  return found;
}

describe('no value published in the repository is accepted', () => {
  test('each secret-looking value in .env.example, README, docs/ and deploy/ is refused by its variable', () => {
    const found = documentedSecrets();
    assert.ok(found.length > 0, 'the documentation shows no example value at all: is the grep still right?');
    for (const { where, value, variables } of found) {
      for (const variable of variables) {
        const issues = refusal({ [variable]: value }).issues.map((issue) => issue.variable);
        assert.deepEqual(issues, [variable], `${where}: ${variable} accepts the documented value`);
      }
    }
  });

  test('every listed example is refused by every secret variable, as an example', () => {
    for (const { name } of SECRETS) {
      for (const value of EXAMPLE_SECRETS) {
        const { issues, message } = refusal({ [name]: value });
        assert.deepEqual(
          issues.map((issue) => issue.variable),
          [name],
        );
        assert.match(message, new RegExp(`${name}: is an example value`));
        assert.ok(!message.includes(value));
      }
      // Also as one of several, and through its file.
      const file = join(scratch(), 'secret');
      writeFileSync(
        file,
        `${strongValue(name, SECRETS.find((s) => s.name === name)!.key).value}\n${EXAMPLE_SECRETS[0]}\n`,
      );
      assert.match(refusal({ [secretFileVariable(name)]: file }).message, /is an example value/);
    }
  });

  test('.env.example as it stands (nothing else filled in) does not start: each secret named', () => {
    const env = Object.fromEntries(
      [
        ...readFileSync(join(PROJECT_ROOT, '.env.example'), 'utf8').matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm),
      ].map(([, name, value]) => [name!, value!.trim()]),
    );
    const { issues, message } = (() => {
      try {
        loadConfig(env);
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
        return { issues: error.issues, message: error.message };
      }
      assert.fail('.env.example starts');
    })();
    const named = issues.map((issue) => issue.variable);
    for (const name of [
      'DATABASE_URL',
      'SETTLE_WEBHOOK_SECRETS',
      'SETTLE_OUTBOUND_SECRET',
      'SETTLE_API_TOKEN',
    ]) {
      assert.ok(named.includes(name), `${name} is not named: ${named.join(', ')}`);
    }
    // Every secret it sets is named; none is printed.
    for (const { name } of SECRETS.filter((s) => env[s.name])) {
      assert.ok(named.includes(name), `${name} is set in .env.example and accepted`);
      assert.ok(!message.includes(env[name]!), `${name}'s value is printed`);
    }
  });
});
