/**
 * Certificates for a run's mTLS (`npm run topology`): a throw-away CA, the frontend's server
 * certificate (for 127.0.0.1 and `localhost`) and client certificates, all ECDSA P-256, written as
 * PEM files into a folder of the run. Nothing here is for production: a deployment brings its own.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

export type CertificatePaths = { cert: string; key: string };
export type RunCertificates = {
  dir: string;
  /** The CA both sides trust: the server's chain for clients, the clients' chain for the server. */
  ca: string;
  /** The name the frontend's certificate carries (clients check it: TEMPORAL_TLS_SERVER_NAME). */
  serverName: string;
  frontend: CertificatePaths;
  /** settle's processes (gateway, worker, CLI). */
  settle: CertificatePaths;
  /** The operator's tools and the server's own system worker and UI. */
  admin: CertificatePaths;
};

type Issued = { cert: x509.X509Certificate; keys: CryptoKeyPair };

async function keyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function issue(options: {
  subject: string;
  issuer?: Issued;
  ca?: boolean;
  serverNames?: string[];
  client?: boolean;
}): Promise<Issued> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = Date.now();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(Boolean(options.ca), undefined, true),
    new x509.KeyUsagesExtension(
      options.ca
        ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
        : x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (options.issuer) {
    extensions.push(await x509.AuthorityKeyIdentifierExtension.create(options.issuer.cert));
  }
  if (!options.ca) {
    extensions.push(
      new x509.ExtendedKeyUsageExtension(
        [options.client ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth],
        false,
      ),
    );
  }
  if (options.serverNames?.length) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension(
        options.serverNames.map((name) =>
          /^\d+\.\d+\.\d+\.\d+$/.test(name) ? { type: 'ip', value: name } : { type: 'dns', value: name },
        ),
      ),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8)))
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    subject: `CN=${options.subject}`,
    issuer: options.issuer ? options.issuer.cert.subject : `CN=${options.subject}`,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 7 * DAY_MS),
    signingAlgorithm: ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: (options.issuer?.keys ?? keys).privateKey,
    extensions,
  });
  return { cert, keys };
}

/** Generates the run's CA and certificates into `dir`; resolves with their paths. */
export async function generateRunCertificates(dir: string): Promise<RunCertificates> {
  mkdirSync(dir, { recursive: true });
  const serverName = 'localhost';
  const ca = await issue({ subject: 'settle topology CA', ca: true });
  const write = async (name: string, issued: Issued): Promise<CertificatePaths> => {
    const paths = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
    writeFileSync(paths.cert, issued.cert.toString('pem') + '\n');
    writeFileSync(paths.key, await keyPem(issued.keys.privateKey), { mode: 0o600 });
    return paths;
  };
  const caPath = join(dir, 'ca.pem');
  writeFileSync(caPath, ca.cert.toString('pem') + '\n');
  return {
    dir,
    ca: caPath,
    serverName,
    frontend: await write(
      'frontend',
      // `temporal`: the frontend's name in docker-compose.yml.
      await issue({
        subject: 'temporal frontend',
        issuer: ca,
        serverNames: [serverName, 'temporal', '127.0.0.1'],
      }),
    ),
    settle: await write('settle', await issue({ subject: 'settle', issuer: ca, client: true })),
    admin: await write('admin', await issue({ subject: 'temporal admin', issuer: ca, client: true })),
  };
}
