/**
 * The payload codec without a server: what it writes (no plaintext, a fresh nonce, the key ID), what
 * it reads (its own payloads under any configured key, unencrypted ones as they are), what it refuses
 * (an unknown key ID, an altered payload), failures encrypted too, and the variables that configure it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  ApplicationFailure,
  defaultPayloadConverter,
  METADATA_ENCODING_KEY,
  type Payload,
} from '@temporalio/common';
import {
  decodeFailure,
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  encodeFailure,
} from '@temporalio/common/lib/internal-non-workflow/codec-helpers';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/data-converter-helpers';
import { ConfigError, loadConfig, loadConfigPart } from '../../src/config';
import type { PayloadKey } from '../../src/config/payload-keys';
import {
  loadOrCreateDevSecrets,
  resolveStackEnvironment,
  writeRunningStack,
} from '../../src/config/dev-state';
import { settleDataConverter } from '../../src/temporal/data-converter';
import { EncryptionCodec, KEY_ID_METADATA, StaticKeySource } from '../../src/temporal/payload-codec';

const MARKER = 'marker-7f3a1c-jane.doe@example.com';
const key = (id: string): PayloadKey => ({ id, key: randomBytes(32) });
const codecOf = (...keys: PayloadKey[]) => new EncryptionCodec(new StaticKeySource(keys));
const payloadOf = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const valueOf = (payload: Payload): unknown => defaultPayloadConverter.fromPayload(payload);
const text = (payload: Payload) =>
  Buffer.concat([
    ...Object.entries(payload.metadata ?? {}).flatMap(([k, v]) => [Buffer.from(k), Buffer.from(v)]),
    Buffer.from(payload.data ?? []),
  ]).toString('latin1');
const spec = (...keys: PayloadKey[]) => keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',');

describe('payload codec', () => {
  const event = { id: 'pay_1', data: { amount: 98765, currency: 'EUR', customer: MARKER } };

  test('an encoded payload holds neither the marker nor the amount, and decodes back to the value', async () => {
    const codec = codecOf(key('k1'));
    const [encoded] = await codec.encode([payloadOf(event)]);
    assert.equal(Buffer.from(encoded!.metadata![METADATA_ENCODING_KEY]!).toString(), 'binary/encrypted');
    assert.equal(Buffer.from(encoded!.metadata![KEY_ID_METADATA]!).toString(), 'k1');
    assert.ok(!text(encoded!).includes(MARKER));
    assert.ok(!text(encoded!).includes('98765'));
    assert.ok(!text(encoded!).includes('json/plain'), 'the inner encoding is encrypted too');
    const [decoded] = await codec.decode([encoded!]);
    assert.deepEqual(valueOf(decoded!), event);
  });

  test('each payload gets a fresh nonce: the same value encrypts differently every time', async () => {
    const codec = codecOf(key('k1'));
    const encoded = await codec.encode([payloadOf(event), payloadOf(event)]);
    const again = await codec.encode([payloadOf(event)]);
    const nonces = [...encoded, ...again].map((p) => Buffer.from(p.data!).subarray(0, 12).toString('hex'));
    assert.equal(new Set(nonces).size, 3);
  });

  test('a payload that is not encrypted decodes as it is', async () => {
    const plain = payloadOf(event);
    const [decoded] = await codecOf(key('k1')).decode([plain]);
    assert.equal(decoded, plain);
  });

  test('a payload under a key ID not configured is an error naming the ID', async () => {
    const [encoded] = await codecOf(key('retired-2026-01')).encode([payloadOf(event)]);
    await assert.rejects(codecOf(key('k2')).decode([encoded!]), /"retired-2026-01"/);
  });

  test('an altered payload, or one relabelled with another key ID, does not decrypt', async () => {
    const one = key('k1');
    const other = { id: 'k2', key: one.key };
    const codec = codecOf(one, other);
    const [encoded] = await codec.encode([payloadOf(event)]);
    const flipped = Buffer.from(encoded!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await assert.rejects(codec.decode([{ ...encoded!, data: flipped }]), /"k1" does not decrypt/);
    const relabelled = {
      ...encoded!,
      metadata: { ...encoded!.metadata, [KEY_ID_METADATA]: Buffer.from('k2') },
    };
    await assert.rejects(codec.decode([relabelled]), /"k2" does not decrypt/);
  });

  test('a rotation: the new key first encrypts, payloads under the old one still decode', async () => {
    const old = key('k-old');
    const fresh = key('k-new');
    const [before] = await codecOf(old).encode([payloadOf(event)]);
    const rotated = codecOf(fresh, old);
    const [after] = await rotated.encode([payloadOf(event)]);
    assert.equal(Buffer.from(after!.metadata![KEY_ID_METADATA]!).toString(), 'k-new');
    const decoded = await rotated.decode([before!, after!]);
    assert.deepEqual(decoded.map(valueOf), [event, event]);
  });

  test('failures: the message and stack trace travel in an encrypted payload, and read back', async () => {
    const converter = loadDataConverter(settleDataConverter({ payloadKeys: [key('k1')] }));
    const error = ApplicationFailure.nonRetryable(`refused ${MARKER} for 98765`, 'downstream_rejected');
    const failure = await encodeFailure(
      converter.payloadCodecs,
      await encodeErrorToFailure(converter, error),
    );
    const stored = JSON.stringify(failure, (_k, v: unknown) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v,
    );
    assert.ok(!stored.includes(MARKER) && !stored.includes('98765'), stored);
    const decoded = await decodeOptionalFailureToOptionalError(
      converter,
      await decodeFailure(converter.payloadCodecs, failure),
    );
    assert.ok(decoded instanceof ApplicationFailure);
    assert.equal(decoded.message, `refused ${MARKER} for 98765`);
    assert.equal(decoded.type, 'downstream_rejected');
  });

  test('no keys configured: no codec, the SDK default', () => {
    assert.equal(settleDataConverter({}), undefined);
  });
});

describe('payload key variables', () => {
  const REQUIRED = { DATABASE_URL: 'postgres://settle@127.0.0.1/settle', TEMPORAL_ADDRESS: '127.0.0.1:7233' };
  const load = (env: NodeJS.ProcessEnv) => loadConfig({ ...REQUIRED, ...env }, { temporal: 'dev-stack' });
  const refusal = (env: NodeJS.ProcessEnv) => {
    try {
      load(env);
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.message;
    }
    return assert.fail('accepted');
  };

  test('SETTLE_PAYLOAD_KEYS: each key parsed, in order', () => {
    const a = key('2026-12');
    const b = key('2026-06');
    const config = load({ SETTLE_PAYLOAD_KEYS: ` ${spec(a)} , ${spec(b)}` });
    assert.deepEqual(config.payloadKeys, [a, b]);
  });

  test('a bad value stops the start naming the variable, never quoting the key', () => {
    const short = randomBytes(16).toString('base64');
    for (const [value, expected] of [
      [`k1:${short}`, /SETTLE_PAYLOAD_KEYS: key "k1" must be the base64 of 32 random bytes/],
      [randomBytes(32).toString('base64'), /SETTLE_PAYLOAD_KEYS: key 1 must be <key id>:<base64/],
      [`${spec(key('same'))},${spec(key('same'))}`, /SETTLE_PAYLOAD_KEYS: key ID "same" appears twice/],
      ['k1:not base64!', /SETTLE_PAYLOAD_KEYS: key "k1" must be the base64/],
    ] as const) {
      const message = refusal({ SETTLE_PAYLOAD_KEYS: value });
      assert.match(message, expected);
      assert.ok(!message.includes(short));
    }
  });

  test('SETTLE_PAYLOAD_KEYS_FILE: keys one a line; an unreadable file or both variables named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-keys-'));
    const a = key('a');
    const b = key('b');
    const file = join(dir, 'keys');
    writeFileSync(file, `${spec(a)}\n${spec(b)}\n`);
    assert.deepEqual(load({ SETTLE_PAYLOAD_KEYS_FILE: file }).payloadKeys, [a, b]);
    assert.deepEqual(loadConfigPart(['payloadKeys'], { SETTLE_PAYLOAD_KEYS_FILE: file }).payloadKeys, [a, b]);
    assert.match(
      refusal({ SETTLE_PAYLOAD_KEYS_FILE: join(dir, 'missing') }),
      /SETTLE_PAYLOAD_KEYS_FILE: cannot be read: ENOENT/,
    );
    assert.match(
      refusal({ SETTLE_PAYLOAD_KEYS_FILE: file, SETTLE_PAYLOAD_KEYS: spec(a) }),
      /SETTLE_PAYLOAD_KEYS_FILE: is set together with SETTLE_PAYLOAD_KEYS/,
    );
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'a:short\n');
    assert.match(
      refusal({ SETTLE_PAYLOAD_KEYS_FILE: bad }),
      new RegExp(`SETTLE_PAYLOAD_KEYS_FILE \\(${bad}\\): key "a"`),
    );
  });

  test('the codec server variables: token length, port default, an origin only', () => {
    assert.equal(load({}).codecPort, 8235);
    assert.match(refusal({ SETTLE_CODEC_TOKEN: 'short' }), /SETTLE_CODEC_TOKEN: must be at least 32/);
    assert.match(
      refusal({ SETTLE_CODEC_CORS_ORIGIN: 'http://127.0.0.1:8233/ui' }),
      /SETTLE_CODEC_CORS_ORIGIN: must be an origin/,
    );
    assert.equal(
      load({ SETTLE_CODEC_CORS_ORIGIN: 'http://127.0.0.1:8233' }).codecCorsOrigin,
      'http://127.0.0.1:8233',
    );
  });
});

describe('npm start: the development key and codec token', () => {
  test('generated beside the older secrets, reused, and given to the commands reading the stack', () => {
    delete process.env.SETTLE_HOME;
    const cwd = mkdtempSync(join(tmpdir(), 'settle-dev-'));
    const older = {
      webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      apiToken: 'a'.repeat(24),
      outboundSecret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
    };
    mkdirSync(join(cwd, '.settle'));
    writeFileSync(join(cwd, '.settle', 'dev-secrets.json'), JSON.stringify(older));
    const secrets = loadOrCreateDevSecrets(cwd);
    assert.equal(secrets.apiToken, older.apiToken, 'the older secrets are kept');
    assert.deepEqual(loadOrCreateDevSecrets(cwd), secrets, 'reused on the next start');
    assert.ok(
      loadConfig(
        {
          DATABASE_URL: 'postgres://x@127.0.0.1/x',
          TEMPORAL_ADDRESS: '127.0.0.1:7233',
          SETTLE_PAYLOAD_KEYS: secrets.payloadKey,
        },
        { temporal: 'dev-stack' },
      ).payloadKeys?.length === 1,
    );
    const stack = {
      pid: process.pid,
      databaseUrl: 'postgres://x@127.0.0.1/x',
      temporalAddress: '127.0.0.1:7233',
      temporalUiUrl: null,
      gatewayUrl: 'http://127.0.0.1:8080',
      namespace: 'default',
      taskQueue: 'settle',
    };
    writeRunningStack({ ...stack, devPayloadKey: true }, cwd);
    assert.equal(resolveStackEnvironment({}, cwd).env.SETTLE_PAYLOAD_KEYS, secrets.payloadKey);
    assert.equal(
      resolveStackEnvironment({ SETTLE_PAYLOAD_KEYS_FILE: '/keys' }, cwd).env.SETTLE_PAYLOAD_KEYS,
      undefined,
    );
    writeRunningStack({ ...stack, devPayloadKey: false }, cwd);
    assert.equal(
      resolveStackEnvironment({}, cwd).env.SETTLE_PAYLOAD_KEYS,
      undefined,
      'a stack started with keys of its own',
    );
  });
});
