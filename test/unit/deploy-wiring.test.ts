/**
 * Every deploy artefact against the providers' table (src/providers/registry.ts, each module's
 * `deploy`): `.env.example`, compose, the kustomize manifests and the Helm chart must carry each
 * provider's variables, mount each secret (through its _FILE) in the roles that read it, mount each
 * file a variable names, and let each role reach what the providers need. A provider added to the
 * table fails here, naming the artefact and the variable, until each of them has it. The chart is
 * rendered with Helm as `npm run manifests:check` renders it (built into the tool cache first if missing).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { secretFileVariable } from '../../src/config';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { PROVIDER_MODULES } from '../../src/providers/registry';
import {
  CHART_SECRET_KEYS,
  chartSecretKeys,
  ensureHelm,
  NON_PROVIDER_SECRET_KEYS,
} from '../../testkit/deploy-wiring';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');
/** The `NAME=` lines of an env file (a commented `# NAME=` counts: an example to fill in). */
const envNames = (path: string) =>
  new Set([...read(path).matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map(([, name]) => name!));

type Role = 'gateway' | 'worker';
const VARIABLES = PROVIDER_MODULES.flatMap((module) =>
  module.deploy.variables.map((variable) => ({
    provider: module.name,
    name: variable.name,
    secret: variable.secret,
    roles: (variable.roles ?? ['gateway']) as Role[],
  })),
);
const PLAIN = VARIABLES.filter((variable) => !variable.secret);
const SECRETS = VARIABLES.filter((variable) => variable.secret);
const FILES = PROVIDER_MODULES.flatMap((module) =>
  module.deploy.files.map((file) => ({ provider: module.name, ...file })),
);
const EGRESS = PROVIDER_MODULES.flatMap((module) =>
  module.deploy.egress.map((egress) => ({ provider: module.name, ...egress })),
);
const SECRETS_DIR = '/etc/settle/secrets';

type Env = { name: string; value?: string };
type Volume = {
  name: string;
  secret?: { secretName?: string; items?: { key: string; path: string }[] };
  configMap?: { name: string; items?: { key: string; path: string }[] };
  projected?: { sources: { secret?: { items?: { key: string; path: string }[] } }[] };
};
type Container = { name: string; env?: Env[]; volumeMounts?: { name: string; mountPath: string }[] };
type PodSpec = { containers: Container[]; volumes?: Volume[] };
type K8sObject = {
  kind: string;
  metadata: { name: string };
  spec?: {
    template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    podSelector?: { matchLabels?: Record<string, string> };
    egress?: { to?: { ipBlock?: { cidr: string } }[]; ports?: { port?: number }[] }[];
  };
  data?: Record<string, string>;
};

const objectsOf = (text: string) =>
  parseAllDocuments(text)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => !!object);

/** The pods of a role (app.kubernetes.io/component) among the objects, with where they come from. */
function podsOf(objects: K8sObject[], role: Role): { name: string; spec: PodSpec }[] {
  return objects
    .filter(
      (o) =>
        o.kind === 'Deployment' &&
        o.spec?.template?.metadata?.labels?.['app.kubernetes.io/component'] === role,
    )
    .map((o) => ({ name: `Deployment ${o.metadata.name}`, spec: o.spec!.template!.spec }));
}

/** The keys of the pod's `secrets` volume (a secret volume, or a projected one). */
function secretItems(pod: PodSpec): string[] {
  const volume = pod.volumes?.find((v) => v.name === 'secrets');
  return [
    ...(volume?.secret?.items ?? []),
    ...(volume?.projected?.sources ?? []).flatMap((s) => s.secret?.items ?? []),
  ].map((item) => item.key);
}

/** Failures for a secret not read through its _FILE from the role's mounted Secret. */
function secretProblems(where: string, pod: PodSpec, name: string): string[] {
  const settle = pod.containers.find((c) => c.name === 'settle');
  const file = secretFileVariable(name);
  const problems: string[] = [];
  if (settle?.env?.find((e) => e.name === file)?.value !== `${SECRETS_DIR}/${name}`)
    problems.push(`${where}: env ${file}=${SECRETS_DIR}/${name} is missing`);
  if (!secretItems(pod).includes(name)) problems.push(`${where}: the secrets volume has no item ${name}`);
  return problems;
}

/** Whether a NetworkPolicy selecting the role lets it reach an ipBlock on the port. */
function egressAllowed(objects: K8sObject[], role: Role, port: number): boolean {
  return objects
    .filter(
      (o) =>
        o.kind === 'NetworkPolicy' &&
        o.spec?.podSelector?.matchLabels?.['app.kubernetes.io/component'] === role,
    )
    .some((policy) =>
      (policy.spec?.egress ?? []).some(
        (rule) =>
          (rule.to ?? []).some((peer) => peer.ipBlock) &&
          (rule.ports ?? []).some((p) => p.port === undefined || p.port === port),
      ),
    );
}

describe("every deploy artefact carries the providers' table", () => {
  test('the table declares variables', () => {
    assert.ok(PLAIN.length > 0 && SECRETS.length > 0, 'the registry declares no deploy variables');
  });

  test('.env.example lists every provider variable', () => {
    const names = envNames('.env.example');
    const missing = VARIABLES.filter((v) => !names.has(v.name)).map((v) => `.env.example: ${v.name}=`);
    assert.deepEqual(missing, []);
  });

  test('docker-compose.yml gives the gateway and the workers every provider variable', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as {
      services: Record<string, { command?: string[]; environment?: Record<string, string> }>;
    };
    const settle = Object.entries(compose.services).filter(([, s]) =>
      ['gateway', 'worker'].includes(s.command?.[0] ?? ''),
    );
    assert.ok(
      settle.some(([, s]) => s.command?.[0] === 'gateway'),
      'docker-compose.yml: no gateway service',
    );
    assert.ok(
      settle.some(([, s]) => s.command?.[0] === 'worker'),
      'docker-compose.yml: no worker service',
    );
    const missing = settle.flatMap(([service, s]) =>
      VARIABLES.filter((v) => !(s.environment?.[v.name] ?? '').includes(`\${${v.name}`)).map(
        (v) => `docker-compose.yml, service ${service}: environment ${v.name}: \${${v.name}:-}`,
      ),
    );
    assert.deepEqual(missing, []);
    // The TLS variant adds to each service's environment (compose merges it): it must not unset any.
    const tls = parse(read('docker-compose.tls.yml'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string> }>;
    };
    const overridden = Object.entries(tls.services).flatMap(([service, s]) =>
      VARIABLES.filter(
        (v) => s.environment && v.name in s.environment && !s.environment[v.name]!.includes(`\${${v.name}`),
      ).map((v) => `docker-compose.tls.yml, service ${service}: environment ${v.name} overrides the host's`),
    );
    assert.deepEqual(overridden, []);
  });

  test('kustomize: config.env and the Secret example list them, each role mounts its secrets', () => {
    const config = envNames('deploy/kubernetes/base/config.env');
    const secrets = envNames('deploy/kubernetes/base/secrets/settle.env.example');
    const problems = [
      ...PLAIN.filter((v) => !config.has(v.name)).map((v) => `deploy/kubernetes/base/config.env: ${v.name}=`),
      ...PLAIN.filter((v) => secrets.has(v.name)).map(
        (v) => `deploy/kubernetes/base/secrets/settle.env.example: ${v.name} is no secret (config.env)`,
      ),
      ...SECRETS.filter((v) => !secrets.has(v.name)).map(
        (v) => `deploy/kubernetes/base/secrets/settle.env.example: ${v.name}=`,
      ),
      ...SECRETS.filter((v) => config.has(v.name)).map(
        (v) => `deploy/kubernetes/base/config.env: ${v.name} is a secret (secrets/settle.env)`,
      ),
    ];
    const roleFiles: Record<Role, string[]> = {
      gateway: ['deploy/kubernetes/base/gateway.yaml'],
      worker: ['deploy/kubernetes/base/worker.yaml', 'deploy/kubernetes/overlays/rollout/worker-next.yaml'],
    };
    for (const [role, paths] of Object.entries(roleFiles) as [Role, string[]][])
      for (const path of paths) {
        const pods = podsOf(objectsOf(read(path)), role);
        assert.ok(pods.length > 0, `${path}: no ${role} Deployment`);
        for (const pod of pods)
          for (const secret of SECRETS.filter((v) => v.roles.includes(role)))
            problems.push(...secretProblems(`${path}, ${pod.name}`, pod.spec, secret.name));
      }
    assert.deepEqual(problems, []);
  });

  test("kustomize: each role's NetworkPolicy allows the providers' egress", () => {
    const path = 'deploy/kubernetes/base/network-policy.yaml';
    const objects = objectsOf(read(path));
    const problems = EGRESS.flatMap((egress) =>
      (['gateway', 'worker'] as Role[])
        .filter((role) => !egressAllowed(objects, role, egress.port))
        .map(
          (role) =>
            `${path}: the ${role} cannot reach ${egress.host}:${egress.port} (${egress.provider}, when ${egress.when})`,
        ),
    );
    assert.deepEqual(problems, []);
  });

  test("the chart's values and schema take every non-secret variable and refuse each secret as a value", () => {
    const values = parse(read('deploy/helm/settle/values.yaml')) as { config: Record<string, string> };
    const schema = JSON.parse(read('deploy/helm/settle/values.schema.json')) as {
      properties: {
        config: { propertyNames: { pattern: string; not: { pattern: string } } };
        secrets: {
          properties: {
            optional: { items: { enum: string[] } };
            from: { propertyNames: { enum: string[] } };
          };
        };
      };
    };
    const names = schema.properties.config.propertyNames;
    const accepted = new RegExp(names.pattern);
    const refused = new RegExp(names.not.pattern);
    const { optional, from } = schema.properties.secrets.properties;
    const problems = [
      ...PLAIN.filter((v) => !(v.name in values.config)).map(
        (v) => `deploy/helm/settle/values.yaml: config.${v.name}`,
      ),
      ...PLAIN.filter((v) => !accepted.test(v.name) || refused.test(v.name)).map(
        (v) => `deploy/helm/settle/values.schema.json: config.${v.name} is refused`,
      ),
      ...SECRETS.filter((v) => !refused.test(v.name)).map(
        (v) => `deploy/helm/settle/values.schema.json: config.${v.name} is taken as a value (it is a secret)`,
      ),
      ...SECRETS.filter((v) => !from.propertyNames.enum.includes(v.name)).map(
        (v) => `deploy/helm/settle/values.schema.json: secrets.from does not take ${v.name}`,
      ),
      ...SECRETS.filter((v) => v.roles.includes('worker') && !optional.items.enum.includes(v.name)).map(
        (v) => `deploy/helm/settle/values.schema.json: secrets.optional does not take ${v.name}`,
      ),
    ];
    assert.deepEqual(problems, []);
  });

  test("the chart's secret key table is the registry's secrets and settle's own", () => {
    const table = parse(readFileSync(CHART_SECRET_KEYS, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(
      Object.keys(table).sort(),
      [...NON_PROVIDER_SECRET_KEYS, ...SECRETS.map((v) => v.name)].sort(),
      'deploy/helm/settle/files/secret-keys.yaml: run npm run chart:secret-keys',
    );
    assert.equal(
      readFileSync(CHART_SECRET_KEYS, 'utf8'),
      chartSecretKeys(),
      'deploy/helm/settle/files/secret-keys.yaml is stale: run npm run chart:secret-keys',
    );
  });

  describe('the chart, rendered', () => {
    let helm = '';
    before(async () => {
      helm = await ensureHelm((line) => process.stderr.write(`${line}\n`));
    });
    const render = (args: string[]) => {
      const result = spawnSync(
        helm,
        [
          'template',
          'settle',
          join(PROJECT_ROOT, 'deploy', 'helm', 'settle'),
          '--namespace',
          'settle',
          ...args,
        ],
        { encoding: 'utf8', maxBuffer: 64 << 20 },
      );
      assert.equal(result.status, 0, `helm template ${args.join(' ')}: ${result.stderr}`);
      return objectsOf(result.stdout);
    };
    const optional = SECRETS.filter((v) => v.roles.includes('worker')).map((v) => v.name);

    test('every non-secret variable reaches the ConfigMap, every secret its roles', () => {
      const setConfig = PLAIN.flatMap((v) => ['--set-string', `config.${v.name}=x`]);
      const objects = render([...setConfig, '--set', `secrets.optional={${optional.join(',')}}`]);
      const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'settle-config');
      const problems = PLAIN.filter((v) => config?.data?.[v.name] !== 'x').map(
        (v) => `the chart's ConfigMap settle-config: ${v.name} (config.${v.name})`,
      );
      for (const role of ['gateway', 'worker'] as Role[]) {
        const pods = podsOf(objects, role);
        assert.ok(pods.length > 0, `the chart renders no ${role} Deployment`);
        for (const pod of pods)
          for (const secret of SECRETS.filter((v) => v.roles.includes(role)))
            problems.push(...secretProblems(`the chart's ${pod.name}`, pod.spec, secret.name));
      }
      assert.deepEqual(problems, []);
    });

    test('each file a variable names can be mounted from a ConfigMap or a Secret', () => {
      const values = parse(read('deploy/helm/settle/values.yaml')) as {
        providers?: Record<string, Record<string, { key?: string }>>;
      };
      const problems: string[] = [];
      for (const file of FILES) {
        const entries = Object.entries(values.providers?.[file.provider] ?? {}).filter(
          ([, value]) => value && typeof value === 'object' && 'key' in value,
        );
        if (entries.length !== 1) {
          problems.push(
            `deploy/helm/settle/values.yaml: providers.${file.provider} has no file for ${file.variable}`,
          );
          continue;
        }
        const [field] = entries[0]!;
        for (const kind of ['existingConfigMap', 'existingSecret'] as const) {
          const objects = render(['--set', `providers.${file.provider}.${field}.${kind}=held-file`]);
          for (const pod of podsOf(objects, 'gateway')) {
            const settle = pod.spec.containers.find((c) => c.name === 'settle');
            const path = settle?.env?.find((e) => e.name === file.variable)?.value ?? '';
            const mount = settle?.volumeMounts?.find((m) => path.startsWith(`${m.mountPath}/`));
            const volume = pod.spec.volumes?.find((v) => v.name === mount?.name);
            const source =
              kind === 'existingConfigMap' ? volume?.configMap?.name : volume?.secret?.secretName;
            if (source !== 'held-file')
              problems.push(
                `the chart's ${pod.name}: ${file.variable} names no file of ${kind} held-file ` +
                  `(providers.${file.provider}.${field}.${kind})`,
              );
          }
        }
      }
      assert.deepEqual(problems, []);
    });

    test("each role's NetworkPolicy allows the providers' egress", () => {
      const objects = render([]);
      const problems = EGRESS.flatMap((egress) =>
        (['gateway', 'worker'] as Role[])
          .filter((role) => !egressAllowed(objects, role, egress.port))
          .map(
            (role) =>
              `the chart's NetworkPolicy: the ${role} cannot reach ${egress.host}:${egress.port} (${egress.provider}, when ${egress.when})`,
          ),
      );
      assert.deepEqual(problems, []);
    });
  });
});
