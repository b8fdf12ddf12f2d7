/**
 * What the deploy artefacts must hold for the providers' table (src/providers/registry.ts): the
 * chart's secret key table generated from it (`npm run chart:secret-keys` writes it, the
 * deploy-wiring test checks it is current), and the Helm binary the test renders the chart with.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../src/lib/paths';
import { PROVIDER_MODULES } from '../src/providers/registry';
import { buildInto, goRun, HELM_VERSION } from './binaries';

/** The chart's file holding the secret key table (templates/_helpers.tpl, settle.secretKeyTable). */
export const CHART_SECRET_KEYS = join(PROJECT_ROOT, 'deploy', 'helm', 'settle', 'files', 'secret-keys.yaml');

type KeyRow = { key: string; roles: string[]; required: boolean };

/** settle's own secret keys, before the providers' webhook secrets. */
const LEADING: KeyRow[] = [
  { key: 'DATABASE_URL', roles: ['gateway', 'worker', 'migrate'], required: true },
  { key: 'SETTLE_WEBHOOK_SECRETS', roles: ['gateway'], required: true },
];
/** settle's own secret keys, after the providers' webhook secrets. */
const TRAILING: KeyRow[] = [
  { key: 'SETTLE_API_TOKEN', roles: ['gateway'], required: true },
  { key: 'SETTLE_OUTBOUND_SECRET', roles: ['worker'], required: true },
  { key: 'SETTLE_CARRIER_SECRET', roles: ['worker'], required: true },
  { key: 'SETTLE_ERP_SECRET', roles: ['worker'], required: true },
  { key: 'SETTLE_REMINDER_SECRET', roles: ['worker'], required: true },
  { key: 'SETTLE_PAYLOAD_KEYS', roles: ['gateway', 'worker', 'codec-server'], required: true },
  { key: 'SETTLE_CODEC_TOKEN', roles: ['codec-server'], required: true },
];

/** settle's secret keys that no provider declares. */
export const NON_PROVIDER_SECRET_KEYS = [...LEADING, ...TRAILING].map((row) => row.key);

/**
 * Each provider's secret, the roles that mount it, and whether the chart mounts it whatever the
 * values: a secret only the gateway reads (a webhook's) always, one a worker reads (an API
 * credential for the recovery sweep) only when `secrets.optional` lists it.
 */
export function providerSecretRows(): KeyRow[] {
  return PROVIDER_MODULES.flatMap((module) =>
    module.deploy.variables
      .filter((variable) => variable.secret)
      .map((variable) => {
        const roles = variable.roles ?? ['gateway'];
        return { key: variable.name, roles, required: !roles.includes('worker') };
      }),
  );
}

/** The chart's secret key table as files/secret-keys.yaml holds it, in the roles' mount order. */
export function chartSecretKeys(): string {
  const provider = providerSecretRows();
  const rows = [
    ...LEADING,
    ...provider.filter((row) => row.required),
    ...TRAILING,
    ...provider.filter((row) => !row.required),
  ];
  return [
    "# Generated from the providers' table (src/providers/registry.ts) by `npm run chart:secret-keys`:",
    "# settle's secret keys, the roles that mount each, and whether the chart mounts it whatever the",
    '# values (required) or only when `secrets.optional` lists it. Do not edit.',
    ...rows.map((row) => `${row.key}: { roles: [${row.roles.join(', ')}], required: ${row.required} }`),
    '',
  ].join('\n');
}

/** `.tools/helm-<version>/bin/helm`, built from the Go module proxy first as manifests:check does. */
export async function ensureHelm(log: (line: string) => void = () => {}): Promise<string> {
  const dir = join(PROJECT_ROOT, '.tools', `helm-${HELM_VERSION}`);
  if (!existsSync(join(dir, '.complete')))
    await buildInto(dir, log, (go) =>
      goRun(go, ['install', `helm.sh/helm/v4/cmd/helm@v${HELM_VERSION}`], log),
    );
  return join(dir, 'bin', 'helm');
}
