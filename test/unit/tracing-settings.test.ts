import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../../src/config/error';
import { tracingSettings } from '../../src/tracing/tracing';

const ENDPOINT = 'http://collector:4318';

test('tracing is on only with an OTLP endpoint, and off again with the standard switches', () => {
  assert.equal(tracingSettings({}), undefined);
  // What platforms set on their own turns nothing on.
  assert.equal(
    tracingSettings({
      OTEL_SERVICE_NAME: 'settle',
      OTEL_RESOURCE_ATTRIBUTES: 'a=b',
      OTEL_TRACES_SAMPLER: 'always_on',
    }),
    undefined,
  );
  assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), { protocol: 'http/protobuf' });
  assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces` }), {
    protocol: 'http/protobuf',
  });
  assert.deepEqual(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    { protocol: 'http/json' },
  );
  // The signal's own protocol wins over the general one, as the specification has it.
  assert.deepEqual(
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    }),
    { protocol: 'http/json' },
  );
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'true' }),
    undefined,
  );
  assert.equal(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }),
    undefined,
  );
});

test('a protocol settle cannot export with, or an endpoint that is no URL, stops the start naming the variable', () => {
  assert.throws(
    () => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.issues.some(
        (issue) =>
          issue.variable === 'OTEL_EXPORTER_OTLP_PROTOCOL' &&
          /http\/protobuf or http\/json/.test(issue.message),
      ),
  );
  assert.throws(
    () => tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.issues.some((issue) => issue.variable === 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
  );
});

test('`settle --help` loads no OpenTelemetry module, even with tracing configured', () => {
  // The exit hook goes first: --help exits from inside main.ts's parse.
  const probe = `process.on('exit', () => { const loaded = Object.keys(require.cache).filter((p) => p.includes('@opentelemetry')); process.stderr.write('LOADED ' + JSON.stringify(loaded)); });
require(${JSON.stringify(join(__dirname, '..', '..', 'src', 'cli', 'main.ts'))});`;
  const run = spawnSync(
    process.execPath,
    ['--require', require.resolve('tsx/cjs'), '-e', probe, 'settle', '--help'],
    {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT },
      encoding: 'utf8',
    },
  );
  assert.match(run.stdout, /Usage: settle/);
  assert.match(run.stderr, /LOADED \[\]/);
});
