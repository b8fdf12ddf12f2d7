import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

export type Pem = { cert: string; key: string };
export type TestCertificates = {
  ca: Pem;
  server: Pem;
  client: Pem;
  /** The same PEMs written to files in a temporary folder. */
  files: { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string };
};

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

/**
 * A CA made for one test run, a server certificate for localhost / 127.0.0.1 and a client
 * certificate, both signed by it: what an mTLS deployment of Temporal uses.
 */
export async function createTestCertificates(): Promise<TestCertificates> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const caKeys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=settle test CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leaf = async (serial: string, name: string, usage: x509.ExtendedKeyUsage): Promise<Pem> => {
    const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial,
      subject: `CN=${name}`,
      issuer: caCert.subject,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([usage]),
        new x509.SubjectAlternativeNameExtension([
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ],
    });
    return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
  };
  const ca = { cert: caCert.toString('pem'), key: await keyPem(caKeys.privateKey) };
  const server = await leaf('02', 'localhost', x509.ExtendedKeyUsage.serverAuth);
  const client = await leaf('03', 'settle', x509.ExtendedKeyUsage.clientAuth);
  const dir = mkdtempSync(join(tmpdir(), 'settle-certs-'));
  const files = {
    ca: join(dir, 'ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
  };
  writeFileSync(files.ca, ca.cert);
  writeFileSync(files.serverCert, server.cert);
  writeFileSync(files.serverKey, server.key, { mode: 0o600 });
  writeFileSync(files.clientCert, client.cert);
  writeFileSync(files.clientKey, client.key, { mode: 0o600 });
  return { ca, server, client, files };
}
