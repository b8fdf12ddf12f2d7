/**
 * `npm run manifests:check`: renders deploy/kubernetes (the base and each overlay) with kustomize and
 * checks every object as strictly as a machine without a cluster allows (docs/deployment.md,
 * "Kubernetes"):
 *
 * 1. the Go validator (tools/manifests/validate) decodes each object into its Kubernetes or KEDA
 *    API type, refusing unknown, misspelled and duplicate fields, and checks the references between
 *    objects and each KEDA trigger against its scaler's own parameters;
 * 2. the settings settle depends on, against settle's own sources: probes, grace against the drain
 *    bound, security context, both task queues in the ScaledObject, every variable a declared one;
 * 3. the NetworkPolicy graph against the table of docs/deployment.md (network-check.ts), and that the
 *    codec server holds no Temporal credential (here, and in the compose files: codec-credentials.ts);
 * 4. the Helm chart deploy/helm/settle (helm-check.ts): lint, each values file through 1 to 3, the
 *    same objects as its kustomize counterpart, values its schema must refuse;
 * 5. that all can fail: broken copies of the rendered objects must be refused.
 *
 * kustomize, helm and the validator are built once from the Go module proxy into `.tools/` (by version;
 * the validator by a hash of its sources) and reused. Prints "N passed, M failed"; exits 1 on any
 * failure.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { configVariables, secretFileVariable, settingsVariables, TEMPORAL_VARIABLES } from '../../src/config';
import { TRACING_VARIABLES } from '../../src/tracing/tracing';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { SHUTDOWN_DEADLINE_MS } from '../../src/lib/shutdown';
import { bulkTaskQueue } from '../../src/temporal/task-queues';
import { buildInto, goRun, type GoContext } from '../../testkit/binaries';
import { Checks, failureList, runMain } from '../../testkit/checks';
import type { Container, Manifest, Probe } from './manifest';
import { composeCredentialProblems, readComposeFiles } from './codec-credentials';
import { HELM_VERSION, helmOutcomes } from './helm-check';
import { NETWORK_FAULTS, networkProblems } from './network-check';
import { eachBuildProblems, ROLLOUT_FAULTS, rolloutProblems } from './rollout-check';

/** The kustomize release that renders the manifests (v5.8.3 does not build from the module proxy). */
export const KUSTOMIZE_VERSION = '5.8.2';
const KEDA_MODULE = 'github.com/kedacore/keda/v2';

const MANIFESTS = join(PROJECT_ROOT, 'deploy', 'kubernetes');
const VALIDATOR_SOURCE = join(__dirname, 'validate');
/** What `kubectl apply -k` is pointed at: the base and each overlay. */
export const TARGETS = ['base', 'overlays/self-hosted-mtls', 'overlays/temporal-cloud', 'overlays/rollout'];
/** The CPU utilisation the capacity model sizes for (tools/bench/capacity.ts, --utilisation 0.6). */
const TARGET_CPU_UTILISATION = 60;
/**
 * settle's secret variables (`secret: true` in src/config/schema.ts): only ever as a file of a Secret
 * volume, through <NAME>_FILE, never an environment value (which `kubectl describe`, crash reports and
 * child processes see).
 */
const FILE_SECRETS = new Set(
  Object.values(configVariables)
    .filter((v) => v.secret)
    .map((v) => v.name),
);
/**
 * Temporal's API key, like settle's own secrets, only as a file: TEMPORAL_API_KEY_FILE (the client
 * configuration reads it). The mTLS key is a file already (TEMPORAL_TLS_CLIENT_KEY_PATH).
 */
const TEMPORAL_FILE_SECRETS = new Set(['TEMPORAL_API_KEY']);
/** The mTLS key's inline form, which has no file form: from a Secret (secretKeyRef) at least. */
const TEMPORAL_SECRETS = new Set(['TEMPORAL_TLS_CLIENT_KEY_DATA']);
const SECRET_VARIABLES = new Set([...FILE_SECRETS, ...TEMPORAL_FILE_SECRETS, ...TEMPORAL_SECRETS]);
/** <NAME>_FILE of each secret variable: a path, so a plain value; it must point into a Secret volume. */
const SECRET_FILE_VARIABLES = new Map(
  [...FILE_SECRETS, ...TEMPORAL_FILE_SECRETS].map((name) => [secretFileVariable(name), name]),
);
/**
 * What lets a process act on Temporal: the API key (either form) and the mTLS client key (either form).
 * The codec server talks to no Temporal, so it holds none of them (docs/deployment.md).
 */
export const TEMPORAL_CREDENTIALS = [
  'TEMPORAL_API_KEY',
  'TEMPORAL_API_KEY_FILE',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
];

const log = (line: string) => process.stderr.write(`manifests: ${line}\n`);

// ---------------------------------------------------------------------------------------------
// Tools: built once into .tools/ (testkit/binaries.ts)

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv }): string {
  const result = spawnSync(command, args, { ...options, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${result.stderr.trim()}`);
  return result.stdout;
}

/** `.tools/<name>/`, built from the Go module proxy first if it is not complete there. */
async function goTool(name: string, build: (go: GoContext) => Promise<void>): Promise<string> {
  const dir = join(PROJECT_ROOT, '.tools', name);
  if (!existsSync(join(dir, '.complete'))) await buildInto(dir, log, build);
  return dir;
}

const goInstalled = async (name: string, target: string, binary: string) =>
  join(await goTool(name, (go) => goRun(go, ['install', target], log)), 'bin', binary);

type Validator = { bin: string; scalers: string };

/** The validator, keyed by a hash of its sources (go.mod pins every module it is built from). */
async function validator(): Promise<Validator> {
  const hash = createHash('sha256');
  for (const name of readdirSync(VALIDATOR_SOURCE).sort()) {
    if (name.endsWith('.go') || name === 'go.mod' || name === 'go.sum')
      hash
        .update(name)
        .update('\0')
        .update(readFileSync(join(VALIDATOR_SOURCE, name)));
  }
  const dir = await goTool(`settle-manifests-validate-${hash.digest('hex').slice(0, 12)}`, async (go) => {
    const options = { cwd: VALIDATOR_SOURCE, env: { ...go.env, GOFLAGS: '-mod=readonly' } };
    run('go', ['build', '-trimpath', '-o', join(go.work, 'bin', 'validate'), '.'], options);
    // KEDA's scaler sources at the pinned version: the validator reads their metadata structs.
    const keda = run('go', ['list', '-m', '-f', '{{.Dir}}', KEDA_MODULE], options).trim();
    const scalers = join(keda, 'pkg', 'scalers');
    mkdirSync(join(go.work, 'keda-scalers'));
    for (const name of readdirSync(scalers)) {
      if (name.endsWith('.go') && !name.endsWith('_test.go'))
        copyFileSync(join(scalers, name), join(go.work, 'keda-scalers', name));
    }
  });
  return { bin: join(dir, 'bin', 'validate'), scalers: join(dir, 'keda-scalers') };
}

// ---------------------------------------------------------------------------------------------
// Rendering

/**
 * Copies deploy/kubernetes without the operator's secret files, each `secrets/X.example` standing in
 * for `secrets/X`, so the check renders what the templates define, never a real secret.
 */
function templateCopy(): string {
  const root = mkdtempSync(join(tmpdir(), 'settle-manifests-'));
  const copy = (from: string, to: string) => {
    mkdirSync(to, { recursive: true });
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const source = join(from, entry.name);
      if (entry.isDirectory()) copy(source, join(to, entry.name));
      else if (basename(from) !== 'secrets') copyFileSync(source, join(to, entry.name));
      else if (entry.name.endsWith('.example'))
        copyFileSync(source, join(to, entry.name.slice(0, -'.example'.length)));
    }
  };
  copy(MANIFESTS, root);
  return root;
}

function render(tool: string, root: string, target: string): string {
  return run(tool, ['build', join(root, target)], {});
}

function validate(tool: Validator, rendered: string): { ok: boolean; output: string } {
  const result = spawnSync(tool.bin, ['-keda-scalers', tool.scalers], { input: rendered, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() };
}

// ---------------------------------------------------------------------------------------------
// settle's settings, checked against its sources

export function parseManifests(rendered: string): Manifest[] {
  return parseAllDocuments(rendered).map((doc) => doc.toJS() as Manifest);
}

const KNOWN_VARIABLES = new Set<string>([
  ...Object.values(configVariables).map((v) => v.name),
  ...Object.values(settingsVariables).map((v) => v.name),
  ...TEMPORAL_VARIABLES.filter((name) => !name.includes('<')),
  // Each secret's file form (load.ts).
  ...SECRET_FILE_VARIABLES.keys(),
  // OpenTelemetry's standard variables (tracing, docs/operations.md).
  ...TRACING_VARIABLES,
  // Node's own, for a deployment that tunes the heap (docs/performance.md).
  'NODE_OPTIONS',
]);
const isKnownVariable = (name: string) => KNOWN_VARIABLES.has(name) || name.startsWith('TEMPORAL_GRPC_META_');

/**
 * What settle needs of the rendered objects, each failure a sentence; an empty list when all hold.
 * `version` is package.json's: the image tag and the migration Job's name carry it.
 */
export function settingsProblems(manifests: Manifest[], version: string): string[] {
  const { failures: problems, expect } = failureList();
  const find = (kind: string, name: string) =>
    manifests.find((m) => m.kind === kind && m.metadata.name === name);
  const configMap = manifests.find(
    (m) => m.kind === 'ConfigMap' && m.metadata.name.startsWith('settle-config'),
  );
  const config = configMap?.data ?? {};
  expect(configMap !== undefined, 'no ConfigMap settle-config');

  const gateway = find('Deployment', 'settle-gateway');
  const worker = find('Deployment', 'settle-worker');
  const codecServer = find('Deployment', 'settle-codec-server');
  const jobName = `settle-migrate-${version.replaceAll('.', '-')}`;
  const job = find('Job', jobName);
  expect(gateway !== undefined, 'no Deployment settle-gateway');
  expect(worker !== undefined, 'no Deployment settle-worker');
  expect(codecServer !== undefined, 'no Deployment settle-codec-server');
  expect(job !== undefined, `no Job ${jobName} (the migration Job is named after package.json's version)`);
  if (!gateway || !worker || !codecServer || !job) return problems;

  // Every variable is one settle declares, and each value parses as settle would parse it.
  for (const [name, value] of Object.entries(config)) {
    expect(isKnownVariable(name), `ConfigMap key ${name} is no variable settle reads (src/config/schema.ts)`);
    expect(!SECRET_VARIABLES.has(name), `${name} is a secret: it belongs in a Secret, not the ConfigMap`);
    const variable =
      Object.values(configVariables).find((v) => v.name === name) ??
      Object.values(settingsVariables).find((v) => v.name === name);
    const parsed = variable?.schema.safeParse(value);
    if (parsed && !parsed.success)
      problems.push(`ConfigMap ${name}=${value}: ${parsed.error.issues[0]?.message}`);
  }

  const roles = [
    { label: 'gateway', object: gateway, args: ['gateway'] },
    { label: 'worker', object: worker, args: ['worker'] },
    { label: 'migration Job', object: job, args: ['migrate'] },
    { label: 'codec server', object: codecServer, args: ['codec-server'] },
  ];
  for (const { label, object, args } of roles) {
    const pod = object.spec.template.spec;
    const main = pod.containers.find((c) => c.name === 'settle');
    expect(main !== undefined, `${label}: no container named settle`);
    if (!main) continue;
    expect(
      JSON.stringify(main.args) === JSON.stringify(args),
      `${label}: args ${JSON.stringify(main.args)}, not ${JSON.stringify(args)}`,
    );
    expect(
      pod.automountServiceAccountToken === false,
      `${label}: automountServiceAccountToken must be false`,
    );
    expect(
      pod.enableServiceLinks === false,
      `${label}: enableServiceLinks must be false (TEMPORAL_GRPC_META_*)`,
    );
    const psc = pod.securityContext ?? {};
    expect(psc.runAsNonRoot === true, `${label}: pod runAsNonRoot must be true`);
    expect(
      psc.runAsUser === 1000 && psc.runAsGroup === 1000,
      `${label}: pod must run as uid/gid 1000 (the image's node user)`,
    );
    expect(psc.seccompProfile?.type === 'RuntimeDefault', `${label}: seccompProfile must be RuntimeDefault`);
    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
      const where = `${label} container ${container.name}`;
      expect(
        container.image === `settle:${version}`,
        `${where}: image ${container.image}, not settle:${version}`,
      );
      const sc = container.securityContext ?? {};
      expect(sc.allowPrivilegeEscalation === false, `${where}: allowPrivilegeEscalation must be false`);
      expect(sc.readOnlyRootFilesystem === true, `${where}: readOnlyRootFilesystem must be true`);
      expect(sc.runAsNonRoot === true, `${where}: runAsNonRoot must be true`);
      expect(sc.privileged !== true, `${where}: must not be privileged`);
      expect(sc.capabilities?.drop?.includes('ALL') === true, `${where}: capabilities must drop ALL`);
      expect(!sc.capabilities?.add?.length, `${where}: must add no capabilities`);
      for (const [kind, values] of [
        ['requests', container.resources?.requests],
        ['limits', container.resources?.limits],
      ] as const)
        expect(
          values?.cpu !== undefined && values.memory !== undefined,
          `${where}: needs cpu and memory ${kind}`,
        );
      // The only writable places are emptyDirs at /tmp, bounded; every other mount is read-only.
      for (const mount of container.volumeMounts ?? []) {
        const volume = volumes.get(mount.name);
        if (mount.readOnly) continue;
        expect(
          volume?.emptyDir !== undefined &&
            mount.mountPath === '/tmp' &&
            volume.emptyDir.sizeLimit !== undefined,
          `${where}: ${mount.mountPath} is writable; only a size-limited emptyDir at /tmp may be`,
        );
      }
      for (const env of container.env ?? []) {
        expect(isKnownVariable(env.name), `${where}: env ${env.name} is no variable settle reads`);
        expect(
          !FILE_SECRETS.has(env.name) && !TEMPORAL_FILE_SECRETS.has(env.name),
          `${where}: ${env.name} must be a mounted file (${secretFileVariable(env.name)}), not an environment value`,
        );
        expect(
          !TEMPORAL_SECRETS.has(env.name) || env.valueFrom?.secretKeyRef !== undefined,
          `${where}: ${env.name} must come from a Secret (secretKeyRef)`,
        );
      }
      // mTLS's TEMPORAL_TLS_*_PATH and every secret's <NAME>_FILE: a key of a read-only Secret volume.
      for (const [name, path] of Object.entries(containerEnv(container, config))) {
        if (!(/^TEMPORAL_TLS_.*_PATH$/.test(name) || SECRET_FILE_VARIABLES.has(name)) || !path) continue;
        const mount = (container.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath}/`));
        const volume = mount && volumes.get(mount.name)?.secret;
        const secret = manifests.find((m) => m.kind === 'Secret' && m.metadata.name === volume?.secretName);
        const file = mount ? path.slice(mount.mountPath.length + 1) : '';
        const key = volume?.items ? volume.items.find((item) => item.path === file)?.key : file;
        expect(
          mount?.readOnly === true && key !== undefined && secret?.data?.[key] !== undefined,
          `${where}: ${name}=${path} is no key of a Secret volume mounted read-only in the container`,
        );
      }
    }
    const envOf = containerEnv(main, config);
    /** The secret is given, as its file. */
    const has = (name: string) => secretFileVariable(name) in envOf;
    if (label === 'codec server') {
      // It reads no database and no Temporal: the keys and its token, from the Secret.
      for (const name of ['SETTLE_PAYLOAD_KEYS', 'SETTLE_CODEC_TOKEN'])
        expect(has(name), `${label}: ${secretFileVariable(name)} is not set`);
      // And it holds no Temporal credential: no such variable, no volume of a Secret that has one.
      for (const name of TEMPORAL_CREDENTIALS)
        expect(!(name in envOf), `${label}: holds a Temporal credential (${name}); it talks to no Temporal`);
      for (const volume of pod.volumes ?? []) {
        const secret = manifests.find(
          (m) => m.kind === 'Secret' && m.metadata.name === volume.secret?.secretName,
        );
        const keys = Object.keys({ ...secret?.data, ...secret?.stringData });
        const mounted = volume.secret?.items ? volume.secret.items.map((item) => item.key) : keys;
        const credential = mounted.find(
          (key) => TEMPORAL_CREDENTIALS.includes(key) || key === 'tls.key' || /temporal/i.test(key),
        );
        expect(
          credential === undefined,
          `${label}: mounts ${credential} of Secret ${volume.secret?.secretName}: a Temporal credential`,
        );
      }
      continue;
    }
    expect(has('DATABASE_URL'), `${label}: DATABASE_URL_FILE is not set`);
    expect(
      Boolean(envOf.TEMPORAL_ADDRESS) || label === 'migration Job',
      `${label}: TEMPORAL_ADDRESS is not set`,
    );
    // The role's init container migrates the database only: DATABASE_URL, nothing of Temporal.
    if (label !== 'migration Job') {
      const init = (pod.initContainers ?? []).find((c) => c.name === 'migrate');
      expect(
        init !== undefined &&
          JSON.stringify(init.args) === '["migrate"]' &&
          !init.envFrom?.length &&
          JSON.stringify((init.env ?? []).map((e) => e.name)) === '["DATABASE_URL_FILE"]',
        `${label}: needs an init container "migrate" running \`settle migrate\` with DATABASE_URL_FILE alone`,
      );
    }
  }

  // Probes, metrics and grace.
  const port = Number(config.PORT);
  const metricsPort = Number(config.SETTLE_METRICS_PORT);
  const gatewayMetricsPort = Number(config.SETTLE_GATEWAY_METRICS_PORT);
  const gw = gateway.spec.template.spec.containers.find((c) => c.name === 'settle');
  const wk = worker.spec.template.spec.containers.find((c) => c.name === 'settle');
  const portOf = (c: Container | undefined, probe: Probe | undefined) => {
    const p = probe?.httpGet?.port;
    return typeof p === 'number' ? p : c?.ports?.find((cp) => cp.name === p)?.containerPort;
  };
  expect(gw?.readinessProbe?.httpGet?.path === '/readyz', 'gateway: readinessProbe must GET /readyz');
  expect(gw?.livenessProbe?.httpGet?.path === '/healthz', 'gateway: livenessProbe must GET /healthz');
  expect(
    portOf(gw, gw?.readinessProbe) === port && portOf(gw, gw?.livenessProbe) === port,
    `gateway: probes must use PORT ${port}`,
  );
  const cs = codecServer.spec.template.spec.containers.find((c) => c.name === 'settle');
  const codecPort = Number(config.SETTLE_CODEC_PORT ?? configVariables.codecPort.default);
  expect(
    cs?.readinessProbe?.httpGet?.path === '/healthz' && cs.livenessProbe?.httpGet?.path === '/healthz',
    'codec server: probes must GET /healthz',
  );
  expect(
    portOf(cs, cs?.readinessProbe) === codecPort && portOf(cs, cs?.livenessProbe) === codecPort,
    `codec server: probes must use SETTLE_CODEC_PORT ${codecPort}`,
  );
  expect(wk?.livenessProbe?.httpGet?.path === '/healthz', 'worker: livenessProbe must GET /healthz');
  expect(
    portOf(wk, wk?.livenessProbe) === metricsPort,
    `worker: livenessProbe must use SETTLE_METRICS_PORT ${metricsPort}`,
  );
  for (const [label, object, expected] of [
    ['gateway', gateway, gatewayMetricsPort],
    ['worker', worker, metricsPort],
  ] as const) {
    const a = object.spec.template.metadata.annotations ?? {};
    expect(
      a['prometheus.io/scrape'] === 'true' &&
        a['prometheus.io/port'] === String(expected) &&
        a['prometheus.io/path'] === '/metrics',
      `${label}: prometheus.io annotations must scrape /metrics on ${expected}`,
    );
    const pod = object.spec.template.spec;
    const preStop = pod.containers.find((c) => c.name === 'settle')?.lifecycle?.preStop?.sleep?.seconds ?? 0;
    const grace = pod.terminationGracePeriodSeconds ?? 30;
    expect(
      grace > preStop + SHUTDOWN_DEADLINE_MS / 1000,
      `${label}: terminationGracePeriodSeconds ${grace} must outlast preStop ${preStop} s + settle's ${SHUTDOWN_DEADLINE_MS / 1000} s stop deadline`,
    );
  }

  // Scaling: the gateway's HPA, the workers' ScaledObject on both task queues, both PDBs.
  const hpa = manifests.find(
    (m) => m.kind === 'HorizontalPodAutoscaler' && m.spec.scaleTargetRef.name === 'settle-gateway',
  );
  expect(hpa !== undefined, 'no HorizontalPodAutoscaler for settle-gateway');
  expect((hpa?.spec.minReplicas ?? 1) >= 2, 'gateway HPA: minReplicas must be at least 2');
  expect(
    hpa?.spec.metrics?.some(
      (m) => m.resource?.name === 'cpu' && m.resource.target.averageUtilization === TARGET_CPU_UTILISATION,
    ) === true,
    `gateway HPA: a cpu target of ${TARGET_CPU_UTILISATION} % (the capacity model's utilisation)`,
  );
  const scaled = manifests.find(
    (m) => m.kind === 'ScaledObject' && m.spec.scaleTargetRef.name === 'settle-worker',
  );
  expect(scaled !== undefined, 'no ScaledObject for settle-worker');
  if (scaled) {
    expect((scaled.spec.minReplicaCount ?? 0) >= 2, 'ScaledObject: minReplicaCount must be at least 2');
    const queues = scaled.spec.triggers.filter((t) => t.type === 'temporal').map((t) => t.metadata.taskQueue);
    const live = config.SETTLE_TASK_QUEUE ?? 'settle';
    expect(
      JSON.stringify([...queues].sort()) === JSON.stringify([live, bulkTaskQueue(live)].sort()),
      `ScaledObject: one temporal trigger for each of ${live} and ${bulkTaskQueue(live)}, found ${JSON.stringify(queues)}`,
    );
    for (const t of scaled.spec.triggers.filter((t) => t.type === 'temporal')) {
      const address = t.metadata.endpointFromEnv ? config[t.metadata.endpointFromEnv] : t.metadata.endpoint;
      const namespace = t.metadata.namespaceFromEnv
        ? config[t.metadata.namespaceFromEnv]
        : t.metadata.namespace;
      expect(
        address === config.TEMPORAL_ADDRESS,
        `trigger ${t.name}: endpoint is not settle's TEMPORAL_ADDRESS`,
      );
      expect(
        namespace === config.TEMPORAL_NAMESPACE,
        `trigger ${t.name}: namespace is not settle's TEMPORAL_NAMESPACE`,
      );
    }
    const cpu = scaled.spec.triggers.find((t) => t.type === 'cpu');
    expect(
      cpu?.metadata.value === String(TARGET_CPU_UTILISATION),
      `ScaledObject: a cpu trigger at ${TARGET_CPU_UTILISATION} %`,
    );
  }
  for (const name of ['settle-gateway', 'settle-worker']) {
    const pdb = find('PodDisruptionBudget', name);
    expect(
      pdb?.spec.maxUnavailable === 1,
      `PodDisruptionBudget ${name}: maxUnavailable 1 (of at least 2 replicas)`,
    );
  }
  return problems;
}

/** The container's environment as the kubelet sets it: envFrom (settle-config), then env; Secrets as ''. */
function containerEnv(container: Container, config: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) if (from.configMapRef) Object.assign(env, config);
  for (const e of container.env ?? []) env[e.name] = e.value ?? '';
  return env;
}

// ---------------------------------------------------------------------------------------------
// The run

type Outcome = { name: string; ok: boolean; detail?: string };

/** Broken copies of the rendered base: each must be refused by the validator, naming its fault. */
const VALIDATOR_FAULTS: { name: string; expect: RegExp; edit: (m: Manifest[]) => Manifest[] }[] = [
  {
    name: 'an unknown field (spec.template.spec.containers[0].sidecarMode)',
    expect: /unknown field "spec\.template\.spec\.containers\[0\]\.sidecarMode"/,
    edit: (m) =>
      withWorker(m, (w) => Object.assign(w.spec.template.spec.containers[0]!, { sidecarMode: true })),
  },
  {
    name: 'a misspelled field (livenesProbe)',
    expect: /unknown field "spec\.template\.spec\.containers\[0\]\.livenesProbe"/,
    edit: (m) =>
      withWorker(m, (w) => {
        const c = w.spec.template.spec.containers[0]! as Container & { livenesProbe?: Probe };
        c.livenesProbe = c.livenessProbe;
        delete c.livenessProbe;
      }),
  },
  {
    name: 'a field in the wrong case (TerminationGracePeriodSeconds)',
    expect: /unknown field "spec\.template\.spec\.TerminationGracePeriodSeconds"/,
    edit: (m) =>
      withWorker(m, (w) => Object.assign(w.spec.template.spec, { TerminationGracePeriodSeconds: 15 })),
  },
  {
    name: "an HPA field in KEDA's ScaledObject (minReplicas)",
    expect: /unknown field "spec\.minReplicas"/,
    edit: (m) => edit(m, 'ScaledObject', (s) => Object.assign(s.spec, { minReplicas: 2 })),
  },
  {
    name: 'a misspelled Temporal trigger key (taskQeue)',
    expect: /metadata key "taskQeue" is not a parameter of KEDA's temporal scaler/,
    edit: (m) =>
      edit(m, 'ScaledObject', (s) => {
        const t = s.spec.triggers[0]!;
        t.metadata.taskQeue = t.metadata.taskQueue!;
        delete t.metadata.taskQueue;
      }),
  },
  {
    name: 'a Temporal trigger value of the wrong type (targetQueueSize: lots)',
    expect: /KEDA's parser refuses it/,
    edit: (m) => edit(m, 'ScaledObject', (s) => (s.spec.triggers[1]!.metadata.targetQueueSize = 'lots')),
  },
  {
    name: 'a Secret volume item with a key the Secret does not have',
    expect: /Secret "settle-secrets-[a-z0-9]+" has no key "SETTLE_OUTBOUND_SECRETS"/,
    edit: (m) =>
      withWorker(m, (w) => {
        const volume = w.spec.template.spec.volumes!.find((v) => v.name === 'secrets')!;
        volume.secret!.items!.find((item) => item.key === 'SETTLE_OUTBOUND_SECRET')!.key =
          'SETTLE_OUTBOUND_SECRETS';
      }),
  },
  {
    name: 'a kind with no API type (apps/v1beta9 Deployment)',
    expect: /no API type known for apiVersion "apps\/v1beta9"/,
    edit: (m) => withWorker(m, (w) => (w.apiVersion = 'apps/v1beta9')),
  },
];

/** Broken copies that decode fine but break what settle needs: settingsProblems must say so. */
const SETTINGS_FAULTS: { name: string; expect: RegExp; edit: (m: Manifest[]) => Manifest[] }[] = [
  {
    name: 'a worker grace shorter than the drain',
    expect: /worker: terminationGracePeriodSeconds 5 must outlast/,
    edit: (m) => withWorker(m, (w) => (w.spec.template.spec.terminationGracePeriodSeconds = 5)),
  },
  {
    name: 'no trigger for the bulk task queue',
    expect: /one temporal trigger for each of settle and settle-bulk/,
    edit: (m) =>
      edit(
        m,
        'ScaledObject',
        (s) => (s.spec.triggers = s.spec.triggers.filter((t) => t.metadata.taskQueue !== 'settle-bulk')),
      ),
  },
  {
    name: 'a writable root filesystem',
    expect: /worker container settle: readOnlyRootFilesystem must be true/,
    edit: (m) =>
      withWorker(
        m,
        (w) => (w.spec.template.spec.containers[0]!.securityContext!.readOnlyRootFilesystem = false),
      ),
  },
  {
    name: 'readiness on /healthz instead of /readyz',
    expect: /gateway: readinessProbe must GET \/readyz/,
    edit: (m) =>
      withGateway(m, (d) => (d.spec.template.spec.containers[0]!.readinessProbe!.httpGet!.path = '/healthz')),
  },
  {
    name: 'a secret as an environment value, not a mounted file',
    expect:
      /worker container settle: SETTLE_OUTBOUND_SECRET must be a mounted file \(SETTLE_OUTBOUND_SECRET_FILE\)/,
    edit: (m) =>
      withWorker(m, (w) => {
        const env = w.spec.template.spec.containers[0]!.env!;
        const at = env.findIndex((e) => e.name === 'SETTLE_OUTBOUND_SECRET_FILE');
        env[at] = {
          name: 'SETTLE_OUTBOUND_SECRET',
          valueFrom: { secretKeyRef: { name: 'settle-secrets', key: 'SETTLE_OUTBOUND_SECRET' } },
        };
      }),
  },
  {
    name: 'a secret file outside any Secret volume',
    expect: /gateway container settle: SETTLE_API_TOKEN_FILE=\/tmp\/token is no key of a Secret volume/,
    edit: (m) =>
      withGateway(m, (d) => {
        const env = d.spec.template.spec.containers[0]!.env!;
        env.find((e) => e.name === 'SETTLE_API_TOKEN_FILE')!.value = '/tmp/token';
      }),
  },
  {
    name: 'a misspelled variable in the ConfigMap',
    expect: /ConfigMap key SETTLE_BULK_CONCURENCY is no variable settle reads/,
    edit: (m) => edit(m, 'ConfigMap', (c) => (c.data!.SETTLE_BULK_CONCURENCY = '2')),
  },
];

function edit(
  manifests: Manifest[],
  kind: string,
  change: (m: Manifest) => unknown,
  name?: string,
): Manifest[] {
  const copy = structuredClone(manifests);
  const target = copy.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (!target) throw new Error(`no ${kind} ${name ?? ''} to break`);
  change(target);
  return copy;
}
const withWorker = (m: Manifest[], change: (w: Manifest) => unknown) =>
  edit(m, 'Deployment', change, 'settle-worker');
const withGateway = (m: Manifest[], change: (w: Manifest) => unknown) =>
  edit(m, 'Deployment', change, 'settle-gateway');

async function main(): Promise<void> {
  const version = (
    JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
  ).version;
  const tools = {
    kustomize: await goInstalled(
      `kustomize-${KUSTOMIZE_VERSION}`,
      `sigs.k8s.io/kustomize/kustomize/v5@v${KUSTOMIZE_VERSION}`,
      'kustomize',
    ),
    validator: await validator(),
    helm: await goInstalled(`helm-${HELM_VERSION}`, `helm.sh/helm/v4/cmd/helm@v${HELM_VERSION}`, 'helm'),
  };
  const renders = new Map<string, Manifest[]>();
  const outcomes: Outcome[] = [];
  /** A check that must find nothing: `problems` empty. */
  const clean = (name: string, problems: string[]) =>
    outcomes.push({ name, ok: problems.length === 0, detail: problems.join('\n') });
  /** A check that must fail: one of `problems` matches `expect`. */
  const refuses = (name: string, problems: string[], expect: RegExp) => {
    const ok = problems.some((p) => expect.test(p));
    outcomes.push({ name, ok, detail: ok ? undefined : problems.join('\n') || 'no problem found' });
  };
  const root = templateCopy();
  let base: Manifest[] = [];
  let rollout: Manifest[] = [];
  try {
    for (const target of TARGETS) {
      const rendered = render(tools.kustomize, root, target);
      const checked = validate(tools.validator, rendered);
      outcomes.push({
        name: `${target}: strict decoding and references`,
        ok: checked.ok,
        detail: checked.output,
      });
      const manifests = parseManifests(rendered);
      // A rollout (one worker Deployment per build): each build's objects as the base's, and the rollout's own.
      const problems =
        target === 'overlays/rollout'
          ? [...eachBuildProblems(manifests, version, settingsProblems), ...rolloutProblems(manifests)]
          : settingsProblems(manifests, version);
      clean(`${target}: settle's settings`, problems);
      clean(`${target}: the NetworkPolicy graph is the table's`, networkProblems(manifests));
      renders.set(target, manifests);
      if (target === 'base') base = manifests;
      if (target === 'overlays/rollout') rollout = manifests;
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  outcomes.push(
    ...helmOutcomes({
      helm: tools.helm,
      version,
      kustomize: renders,
      validate: (rendered) => validate(tools.validator, rendered),
      settingsProblems,
      eachBuildProblems: (manifests) => [
        ...eachBuildProblems(manifests, version, settingsProblems),
        ...rolloutProblems(manifests),
      ],
    }),
  );
  for (const fault of VALIDATOR_FAULTS) {
    const broken = fault
      .edit(base)
      .map((m) => stringify(m))
      .join('---\n');
    const checked = validate(tools.validator, broken);
    const ok = !checked.ok && fault.expect.test(checked.output);
    outcomes.push({
      name: `the validator refuses ${fault.name}`,
      ok,
      detail: ok ? undefined : checked.output,
    });
  }
  for (const fault of SETTINGS_FAULTS)
    refuses(
      `the settings check refuses ${fault.name}`,
      settingsProblems(fault.edit(base), version),
      fault.expect,
    );
  for (const fault of NETWORK_FAULTS)
    refuses(`the network check refuses ${fault.name}`, networkProblems(fault.edit(base)), fault.expect);
  const compose = readComposeFiles();
  clean(
    'compose files: the codec server holds no Temporal credential',
    composeCredentialProblems(compose, TEMPORAL_CREDENTIALS),
  );
  {
    // Both can fail: the TLS file's client key given to the codec server too must be refused.
    const broken = structuredClone(compose);
    const tls = broken.find((f) => f.name === 'docker-compose.tls.yml')!;
    tls.services['codec-server'] = {
      environment: { TEMPORAL_TLS_CLIENT_KEY_PATH: '/etc/settle-tls/settle.key' },
      volumes: ['./.settle/tls:/etc/settle-tls:ro'],
    };
    refuses(
      'the compose check refuses a codec server given the mTLS key',
      composeCredentialProblems(broken, TEMPORAL_CREDENTIALS),
      /codec-server holds a Temporal credential \(TEMPORAL_TLS_CLIENT_KEY_PATH\)/,
    );
  }
  {
    const problems = settingsProblems(
      edit(
        base,
        'Deployment',
        (d) =>
          d.spec.template.spec.containers[0]!.env!.push({
            name: 'TEMPORAL_API_KEY_FILE',
            value: '/etc/settle/secrets/SETTLE_CODEC_TOKEN',
          }),
        'settle-codec-server',
      ),
      version,
    );
    refuses(
      'the settings check refuses a codec server given the API key',
      problems,
      /codec server: holds a Temporal credential \(TEMPORAL_API_KEY_FILE\)/,
    );
  }
  for (const fault of ROLLOUT_FAULTS)
    refuses(`the rollout check refuses ${fault.name}`, rolloutProblems(fault.edit(rollout)), fault.expect);
  const checks = new Checks();
  for (const { name, ok, detail } of outcomes)
    checks.record(name, {
      failures: ok ? [] : [detail || 'failed'],
      detail: ok && name.includes('strict') ? detail : '',
    });
  checks.summary('manifests: ');
}

if (require.main === module) runMain('manifests', main);
