/**
 * `npx tsx tools/topology/make-certs.ts <dir>`: development certificates for docker-compose.tls.yml (the
 * same set `npm run topology` generates for each run): ca.pem, frontend.pem/.key (for `temporal`,
 * `localhost` and 127.0.0.1), settle.pem/.key (settle's client certificate) and admin.pem/.key (the
 * Temporal system worker, the UI and the CLI). The keys are made readable by the containers' users
 * (uid 1000 in the Temporal and settle images): for development only; bring your own in production.
 */
import { chmodSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateRunCertificates } from '../../testkit/certs';
import { runMain } from '../../testkit/checks';

async function main() {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: npx tsx tools/topology/make-certs.ts <dir>');
  const certs = await generateRunCertificates(resolve(dir));
  for (const pair of [certs.frontend, certs.settle, certs.admin]) chmodSync(pair.key, 0o644);
  process.stdout.write(`certificates in ${certs.dir} (valid 7 days)\n`);
}

runMain('make-certs', main);
