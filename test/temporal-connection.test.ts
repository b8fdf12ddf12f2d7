import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig, type Config } from '../src/config';
import { probeTls, temporalConnectionOptions } from '../src/temporal/connection';
import { createTestCertificates, type TestCertificates } from './support/certificates';

const BASE = { DATABASE_URL: 'postgres://settle@127.0.0.1:5432/settle' };

/** The variables a ConfigError names, for asserting which one a bad setting is blamed on. */
function blamed(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.issues.map((issue) => issue.variable);
  }
  assert.fail('the configuration was accepted');
}

/**
 * A gRPC endpoint that records the headers and the client certificate of each call and refuses it
 * as Temporal refuses a bad API key (UNAUTHENTICATED): enough to see what a connection sends.
 */
async function recordingEndpoint(tls?: TestCertificates) {
  const calls: { path: string; authorization?: string; clientCertificate?: string }[] = [];
  const onStream = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const peer = tls ? socket?.getPeerCertificate() : undefined;
    calls.push({
      path: String(headers[':path']),
      authorization: String(headers.authorization),
      clientCertificate: peer?.subject?.CN as string | undefined,
    });
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'refused' },
      { endStream: true },
    );
  };
  const server = tls
    ? http2.createSecureServer({
        cert: tls.server.cert,
        key: tls.server.key,
        ca: tls.ca.cert,
        requestCert: true,
        rejectUnauthorized: true,
      })
    : http2.createServer();
  server.on('stream', onStream);
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    calls,
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const session of sessions) session.destroy();
      }),
  };
}

/** Opens both kinds of connection settle uses with `config`; each is refused by the endpoint. */
async function connectBoth(config: Config) {
  const options = temporalConnectionOptions(config);
  await assert.rejects(Connection.connect({ ...options, connectTimeout: 10_000 }));
  await assert.rejects(NativeConnection.connect(options), /refused|Unauthenticated|16/i);
}

let certs: TestCertificates;
before(async () => {
  certs = await createTestCertificates();
});

describe('Temporal connection options from the environment', () => {
  test('without Temporal variables beyond the address: a plain connection to the default namespace', () => {
    const config = loadConfig({ ...BASE, TEMPORAL_ADDRESS: '127.0.0.1:7233' });
    assert.deepEqual(temporalConnectionOptions(config), { address: '127.0.0.1:7233' });
    assert.equal(config.temporalNamespace, 'default');
  });

  test('an API key turns TLS on (the SDK mapping), unless TEMPORAL_TLS=false', () => {
    const config = loadConfig({
      ...BASE,
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_API_KEY: 'k1',
    });
    assert.deepEqual(temporalConnectionOptions(config), {
      address: 'ns.acct.tmprl.cloud:7233',
      apiKey: 'k1',
      tls: true,
    });
    const plain = loadConfig({
      ...BASE,
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_API_KEY: 'k1',
      TEMPORAL_TLS: 'false',
    });
    assert.equal(temporalConnectionOptions(plain).tls, false);
  });

  describe('the API key on the wire', () => {
    let endpoint: Awaited<ReturnType<typeof recordingEndpoint>>;
    before(async () => {
      endpoint = await recordingEndpoint();
    });
    after(() => endpoint.close());

    test('both connections send it as Authorization: Bearer <key>', async () => {
      const config = loadConfig({
        ...BASE,
        TEMPORAL_ADDRESS: endpoint.address,
        TEMPORAL_API_KEY: 'secret-api-key',
        TEMPORAL_TLS: 'false',
      });
      await connectBoth(config);
      assert.ok(endpoint.calls.length >= 2, JSON.stringify(endpoint.calls));
      for (const call of endpoint.calls) {
        assert.match(call.path, /^\/temporal\.api\.workflowservice\.v1\.WorkflowService\//);
        assert.equal(call.authorization, 'Bearer secret-api-key');
      }
    });

    test('TEMPORAL_API_KEY_FILE: the key read from its file, trimmed, sent the same way', async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'settle-temporal-key-')), 'api-key');
      writeFileSync(file, '  file-api-key\n');
      const config = loadConfig({
        ...BASE,
        TEMPORAL_ADDRESS: endpoint.address,
        TEMPORAL_API_KEY_FILE: file,
        TEMPORAL_TLS: 'false',
      });
      assert.equal(temporalConnectionOptions(config).apiKey, 'file-api-key');
      const before = endpoint.calls.length;
      await connectBoth(config);
      const calls = endpoint.calls.slice(before);
      assert.ok(calls.length >= 2, JSON.stringify(calls));
      for (const call of calls) assert.equal(call.authorization, 'Bearer file-api-key');
    });
  });

  test('TEMPORAL_API_KEY_FILE: like an API key, it turns TLS on; a bad file stops the start naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-temporal-key-'));
    const file = join(dir, 'api-key');
    writeFileSync(file, 'cloud-key\n');
    const address = { TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233' };
    assert.deepEqual(
      temporalConnectionOptions(loadConfig({ ...BASE, ...address, TEMPORAL_API_KEY_FILE: file })),
      {
        address: 'ns.acct.tmprl.cloud:7233',
        apiKey: 'cloud-key',
        tls: true,
      },
    );
    assert.deepEqual(blamed({ ...address, TEMPORAL_API_KEY_FILE: join(dir, 'missing') }), [
      'TEMPORAL_API_KEY_FILE',
    ]);
    assert.deepEqual(blamed({ ...address, TEMPORAL_API_KEY_FILE: file, TEMPORAL_API_KEY: 'k1' }), [
      'TEMPORAL_API_KEY_FILE',
    ]);
    writeFileSync(join(dir, 'two-lines'), 'cloud-key\nsecond-line\n');
    assert.deepEqual(blamed({ ...address, TEMPORAL_API_KEY_FILE: join(dir, 'two-lines') }), [
      'TEMPORAL_API_KEY_FILE',
    ]);
    // An empty file is an unset key, as for every <NAME>_FILE.
    writeFileSync(join(dir, 'empty'), '\n');
    assert.equal(
      temporalConnectionOptions(
        loadConfig({ ...BASE, ...address, TEMPORAL_API_KEY_FILE: join(dir, 'empty') }),
      ).apiKey,
      undefined,
    );
    // No message prints the key.
    assert.throws(
      () => loadConfig({ ...BASE, ...address, TEMPORAL_API_KEY_FILE: join(dir, 'two-lines') }),
      (error) => error instanceof ConfigError && !error.message.includes('cloud-key'),
    );
  });

  test('TLS from certificate and key paths', () => {
    const config = loadConfig({
      ...BASE,
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.files.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.files.clientKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.files.ca,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    assertTls(config);
  });

  test('TLS from certificate and key data', () => {
    const config = loadConfig({
      ...BASE,
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS_CLIENT_CERT_DATA: certs.client.cert,
      TEMPORAL_TLS_CLIENT_KEY_DATA: certs.client.key,
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: certs.ca.cert,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    assertTls(config);
  });

  function assertTls(config: Config) {
    const tls = temporalConnectionOptions(config).tls;
    assert.ok(tls && typeof tls === 'object');
    assert.equal(tls.serverNameOverride, 'localhost');
    assert.equal(Buffer.from(tls.serverRootCACertificate!).toString(), certs.ca.cert);
    assert.equal(Buffer.from(tls.clientCertPair!.crt).toString(), certs.client.cert);
    assert.equal(Buffer.from(tls.clientCertPair!.key).toString(), certs.client.key);
  }

  describe('mTLS on the wire', () => {
    let endpoint: Awaited<ReturnType<typeof recordingEndpoint>>;
    before(async () => {
      endpoint = await recordingEndpoint(certs);
    });
    after(() => endpoint.close());

    test('both connections present the client certificate and trust the private CA', async () => {
      const config = loadConfig({
        ...BASE,
        TEMPORAL_ADDRESS: endpoint.address,
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.files.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.files.clientKey,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.files.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      });
      await connectBoth(config);
      assert.ok(endpoint.calls.length >= 2, JSON.stringify(endpoint.calls));
      for (const call of endpoint.calls) assert.equal(call.clientCertificate, 'settle');
    });

    test("the gateway's start probe names TLS when the frontend refuses a missing client certificate", async () => {
      const tls = {
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.files.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      };
      const withoutCertificate = loadConfig({ ...BASE, TEMPORAL_ADDRESS: endpoint.address, ...tls });
      assert.match((await probeTls(withoutCertificate)) ?? 'accepted', /^TLS with Temporal at .* failed/);
      const withCertificate = loadConfig({
        ...BASE,
        TEMPORAL_ADDRESS: endpoint.address,
        ...tls,
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.files.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.files.clientKey,
      });
      assert.equal(await probeTls(withCertificate), undefined);
      // A frontend that is not there is no TLS problem: the gateway starts and answers 503.
      const closed = await recordingEndpoint();
      await closed.close();
      const nobody = loadConfig({ ...BASE, TEMPORAL_ADDRESS: closed.address, ...tls });
      assert.equal(await probeTls(nobody), undefined);
    });
  });

  describe('TOML profiles', () => {
    let file: string;
    before(() => {
      file = join(mkdtempSync(join(tmpdir(), 'settle-temporal-config-')), 'temporal.toml');
      writeFileSync(
        file,
        [
          '[profile.default]',
          'address = "127.0.0.1:7233"',
          '',
          '[profile.prod]',
          'address = "prod.tmprl.cloud:7233"',
          'namespace = "settle-prod"',
          'api_key = "from-profile"',
          '',
          '[profile.mtls]',
          'address = "temporal.internal:7233"',
          'namespace = "settle"',
          '[profile.mtls.tls]',
          `client_cert_path = "${certs.files.clientCert}"`,
          `client_key_path = "${certs.files.clientKey}"`,
          `server_ca_cert_path = "${certs.files.ca}"`,
          'server_name = "localhost"',
          '',
          '[profile.broken]',
          'address = "temporal.internal:7233"',
          '[profile.broken.tls]',
          'client_cert_path = "/nonexistent/client.pem"',
          'client_key_path = "/nonexistent/client.key"',
        ].join('\n'),
      );
    });

    test('TEMPORAL_PROFILE picks a profile of TEMPORAL_CONFIG_FILE', () => {
      const config = loadConfig({ ...BASE, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
      assert.equal(config.temporalNamespace, 'settle-prod');
      assert.deepEqual(temporalConnectionOptions(config), {
        address: 'prod.tmprl.cloud:7233',
        apiKey: 'from-profile',
        tls: true,
      });
      const mtls = loadConfig({ ...BASE, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'mtls' });
      assertTls(mtls);
      assert.equal(mtls.temporalNamespace, 'settle');
    });

    test('without TEMPORAL_PROFILE the profile named default is used', () => {
      const config = loadConfig({ ...BASE, TEMPORAL_CONFIG_FILE: file });
      assert.equal(config.temporalAddress, '127.0.0.1:7233');
    });

    test('each variable overrides its key of the profile', () => {
      const config = loadConfig({
        ...BASE,
        TEMPORAL_CONFIG_FILE: file,
        TEMPORAL_PROFILE: 'prod',
        TEMPORAL_ADDRESS: 'other.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'settle-staging',
        TEMPORAL_API_KEY: 'from-env',
      });
      assert.equal(config.temporalNamespace, 'settle-staging');
      assert.deepEqual(temporalConnectionOptions(config), {
        address: 'other.tmprl.cloud:7233',
        apiKey: 'from-env',
        tls: true,
      });
    });

    test('an unknown profile names TEMPORAL_PROFILE; a missing file TEMPORAL_CONFIG_FILE', () => {
      assert.deepEqual(blamed({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'nope' }), [
        'TEMPORAL_PROFILE',
      ]);
      assert.deepEqual(blamed({ TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' }), [
        'TEMPORAL_CONFIG_FILE',
      ]);
      const [variable] = blamed({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'broken' });
      assert.match(
        variable!,
        /^TEMPORAL_TLS_CLIENT_CERT_PATH \(the profile's client_cert_path in .*temporal\.toml\)$/,
      );
    });
  });

  test('a bad TLS setting stops the process at start, naming its variable', () => {
    const address = { TEMPORAL_ADDRESS: 'temporal.internal:7233' };
    assert.deepEqual(
      blamed({
        ...address,
        TEMPORAL_TLS_CLIENT_CERT_PATH: '/nonexistent/c.pem',
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.files.clientKey,
      }),
      ['TEMPORAL_TLS_CLIENT_CERT_PATH'],
    );
    assert.deepEqual(blamed({ ...address, TEMPORAL_TLS_CLIENT_CERT_PATH: certs.files.clientCert }), [
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
    ]);
    assert.deepEqual(blamed({ ...address, TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'not a certificate' }), [
      'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    ]);
    assert.deepEqual(
      blamed({
        ...address,
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.files.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.files.clientCert,
      }),
      ['TEMPORAL_TLS_CLIENT_KEY_PATH'],
    );
    assert.deepEqual(blamed({ ...address, TEMPORAL_TLS: 'yes' }), ['TEMPORAL_TLS']);
    assert.deepEqual(blamed({ ...address, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }), [
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
    ]);
    assert.deepEqual(blamed({}), ['TEMPORAL_ADDRESS']);
  });
});
