/**
 * The Helm chart's part of `npm run manifests:check` (deploy/helm/settle; docs/deployment.md, "Helm"):
 * `helm lint`, then `helm template` with each values file through the same strict validator and the
 * same settings and network checks as the kustomize output, then a comparison with the kustomize
 * target each values file stands for (the same objects, the same settings), then values the schema
 * must refuse. The chart mounts existing Secrets by name; the check stands in for them with the
 * Secrets kustomize renders from the `.example` files (the same keys, without the hash suffix).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { PROJECT_ROOT } from '../../src/lib/paths';
import type { Manifest } from './manifest';
import { HELM_VERSION } from '../../testkit/binaries';
import { CHART_README, chartReadme } from './chart-readme';
import { networkProblems } from './network-check';

export { HELM_VERSION };
export const CHART = join(PROJECT_ROOT, 'deploy', 'helm', 'settle');

type Outcome = { name: string; ok: boolean; detail?: string };

/** Each values file, what it is rendered with, and the kustomize target it must equal (if any). */
type HelmRender = { name: string; args: string[]; kustomize?: string; secretsFrom: string };
/** A shipped values file: the kustomize target it stands for, and where its Secrets come from. */
const valuesFile = (name: string, kustomize?: string, secretsFrom = kustomize ?? 'base'): HelmRender => ({
  name,
  args: ['-f', join(CHART, name)],
  kustomize,
  secretsFrom,
});
export const HELM_RENDERS: HelmRender[] = [
  { name: 'values.yaml', args: [], kustomize: 'base', secretsFrom: 'base' },
  valuesFile('values-mtls.yaml', 'overlays/self-hosted-mtls'),
  valuesFile('values-cloud.yaml', 'overlays/temporal-cloud'),
  valuesFile('values-rollout.yaml', 'overlays/rollout', 'base'),
  valuesFile('values-worker-controller.yaml'),
  {
    ...valuesFile('values-mtls.yaml', undefined, 'overlays/self-hosted-mtls'),
    name: 'values-mtls.yaml with the monitoring objects',
    args: [
      '-f',
      join(CHART, 'values-mtls.yaml'),
      '--set',
      'monitoring.serviceMonitor=true,monitoring.prometheusRule=true',
    ],
  },
];

/** Values the schema must refuse at `helm template` (so at `helm install`), each naming the value. */
export const SCHEMA_FAULTS: { name: string; args: string[]; expect: RegExp }[] = [
  {
    name: 'a replica count of the wrong type (codecServer.replicas "2")',
    args: ['--set-string', 'codecServer.replicas=2'],
    expect: /codecServer\/replicas|codecServer\.replicas/,
  },
  {
    name: 'a KEDA floor below 2 (worker.keda.minReplicaCount 0)',
    args: ['--set', 'worker.keda.minReplicaCount=0'],
    expect: /minReplicaCount/,
  },
  { name: 'an unknown value (worker.replicas)', args: ['--set', 'worker.replicas=3'], expect: /replicas/ },
  {
    name: 'a secret as a value (config.SETTLE_API_TOKEN)',
    args: ['--set', 'config.SETTLE_API_TOKEN=0123456789abcdef0123456789abcdef'],
    expect: /SETTLE_API_TOKEN/,
  },
  {
    name: 'an unknown Temporal auth (temporal.auth basic)',
    args: ['--set', 'temporal.auth=basic'],
    expect: /auth/,
  },
  {
    name: 'a ConfigMap value that is no string (config.PORT 8080)',
    args: ['--set', 'config.PORT=8080'],
    expect: /PORT/,
  },
];

/** Kinds the validator has no Go type for: checked here, structurally. */
const STRUCTURAL_KINDS = new Set(['TemporalWorkerDeployment', 'ServiceMonitor', 'PrometheusRule']);

export type HelmContext = {
  helm: string;
  version: string;
  /** The kustomize renders by target. */
  kustomize: Map<string, Manifest[]>;
  validate: (rendered: string) => { ok: boolean; output: string };
  settingsProblems: (manifests: Manifest[], version: string) => string[];
  eachBuildProblems: (manifests: Manifest[]) => string[];
};

function helmRun(helm: string, args: string[]) {
  const result = spawnSync(helm, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.error) throw result.error;
  return { ok: result.status === 0, stdout: result.stdout, stderr: result.stderr.trim() };
}

/**
 * The API versions of the CRDs the chart uses, as a cluster with KEDA, the Prometheus Operator and
 * the Temporal Worker Controller serves them: the chart renders their objects only where they are.
 */
export const CRD_API_VERSIONS = [
  'keda.sh/v1alpha1/ScaledObject',
  'keda.sh/v1alpha1/TriggerAuthentication',
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
  'temporal.io/v1alpha1/TemporalWorkerDeployment',
];

/** Labels Helm's conventions add that kustomize does not: set aside wherever they are. */
export const HELM_STANDARD_LABELS = new Set([
  'app.kubernetes.io/instance',
  'app.kubernetes.io/managed-by',
  'helm.sh/chart',
]);

/**
 * `helm template` as release `settle` (so names match kustomize's) on a cluster with the CRDs, the
 * `helm test` hook left out (it is no object of the release's; npm run k8s:check runs it).
 */
const template = (helm: string, args: string[]) =>
  helmRun(helm, [
    'template',
    'settle',
    CHART,
    '--namespace',
    'settle',
    '--skip-tests',
    ...CRD_API_VERSIONS.flatMap((v) => ['--api-versions', v]),
    ...args,
  ]);

const HASH_SUFFIX = /^(settle-[a-z0-9-]+?)-[bcdfghjklmnpqrstvwxz2456789]{10}$/;

/** Kustomize's Secrets without their hash suffix: what the operator creates for the chart. */
function standInSecrets(manifests: Manifest[]): Manifest[] {
  return manifests
    .filter((m) => m.kind === 'Secret')
    .map((m) => {
      const copy = structuredClone(m);
      copy.metadata.name = copy.metadata.name.replace(HASH_SUFFIX, '$1');
      delete (copy.metadata as { namespace?: string }).namespace;
      return copy;
    });
}

/** The objects of a `helm template` output (its empty documents left out). */
const objectsOf = (rendered: string) =>
  parseAllDocuments(rendered)
    .map((doc) => doc.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null && typeof m === 'object');

export function helmOutcomes(ctx: HelmContext): Outcome[] {
  const outcomes: Outcome[] = [];
  const push = (name: string, ok: boolean, detail?: string) => outcomes.push({ name, ok, detail });
  const clean = (name: string, problems: string[]) => push(name, problems.length === 0, problems.join('\n'));
  const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
  push(
    "helm: the chart's appVersion is package.json's version",
    chart.appVersion === ctx.version,
    `appVersion ${chart.appVersion}, package.json ${ctx.version}`,
  );
  const alerts = (file: string) => readFileSync(file, 'utf8');
  push(
    "helm: the chart's alert rules are deploy/monitoring/settle-alerts.yml",
    alerts(join(CHART, 'files', 'settle-alerts.yml')) ===
      alerts(join(PROJECT_ROOT, 'deploy', 'monitoring', 'settle-alerts.yml')),
    'copy deploy/monitoring/settle-alerts.yml to deploy/helm/settle/files/',
  );
  push(
    "helm: the chart's README is what tools/manifests/chart-readme.ts generates from its schema",
    readFileSync(CHART_README, 'utf8') === chartReadme(),
    'run npx tsx tools/manifests/chart-readme.ts --write',
  );
  const undescribed = chartReadme()
    .split('\n')
    .filter((line) => line.startsWith('| `') && /\|\s+\|$/.test(line))
    .map((line) => (line.split(' | ')[0] ?? '').slice(2));
  push(
    "helm: every value in the chart's README says what it does",
    undescribed.length === 0,
    `no description in values.schema.json or values.yaml: ${undescribed.join(', ')}`,
  );

  for (const render of HELM_RENDERS) {
    const label = `helm ${render.name}`;
    const lint = helmRun(ctx.helm, ['lint', CHART, '--strict', ...render.args]);
    push(`${label}: helm lint --strict`, lint.ok, `${lint.stdout}${lint.stderr}`);
    const rendered = template(ctx.helm, render.args);
    if (!rendered.ok) {
      push(`${label}: helm template`, false, rendered.stderr);
      continue;
    }
    const manifests = objectsOf(rendered.stdout);
    const secrets = standInSecrets(ctx.kustomize.get(render.secretsFrom) ?? []);
    const structural = manifests.filter((m) => STRUCTURAL_KINDS.has(m.kind));
    // The Worker Controller's pod template, checked as the Deployment the controller makes of it.
    const asDeployments = structural
      .filter((m) => m.kind === 'TemporalWorkerDeployment')
      .map((m) => workerControllerDeployment(m));
    const checkable = [
      ...manifests.filter((m) => !STRUCTURAL_KINDS.has(m.kind)),
      ...asDeployments,
      ...secrets,
    ];
    const checked = ctx.validate(checkable.map((m) => stringify(m)).join('---\n'));
    push(`${label}: strict decoding and references`, checked.ok, checked.output);

    const problems = asDeployments.length
      ? workerControllerProblems(checkable, structural, ctx)
      : render.kustomize === 'overlays/rollout'
        ? ctx.eachBuildProblems(checkable)
        : ctx.settingsProblems(checkable, ctx.version);
    clean(`${label}: settle's settings`, problems);
    clean(`${label}: the NetworkPolicy graph is the table's`, networkProblems(checkable));
    if (structural.some((m) => m.kind !== 'TemporalWorkerDeployment')) {
      clean(`${label}: ServiceMonitor and PrometheusRule`, monitoringProblems(manifests));
    }
    if (render.kustomize) {
      const differences = compare(manifests, ctx.kustomize.get(render.kustomize) ?? []);
      clean(`${label}: the same objects and settings as kustomize's ${render.kustomize}`, differences);
    }
  }

  {
    // The comparison can fail: a chart rendered with another HPA floor is not the base.
    const rendered = template(ctx.helm, ['--set', 'gateway.autoscaling.minReplicas=3']);
    const manifests = objectsOf(rendered.stdout);
    const differences = compare(manifests, ctx.kustomize.get('base') ?? []);
    const ok = differences.some((d) =>
      /HorizontalPodAutoscaler settle-gateway: \.spec\.minReplicas: chart 3, kustomize 2/.test(d),
    );
    push(
      'helm: the comparison refuses a chart whose gateway HPA differs from the base',
      ok,
      differences.join('\n') || 'no difference found',
    );
  }
  for (const fault of SCHEMA_FAULTS) {
    const rendered = template(ctx.helm, fault.args);
    const ok = !rendered.ok && /schema/i.test(rendered.stderr) && fault.expect.test(rendered.stderr);
    push(
      `helm: the values schema refuses ${fault.name}`,
      ok,
      rendered.ok ? 'rendered without an error' : rendered.stderr,
    );
  }
  return outcomes;
}

// ---------------------------------------------------------------------------------------------
// The Temporal Worker Controller's TemporalWorkerDeployment

/**
 * The fields of TemporalWorkerDeployment (temporal.io/v1alpha1) as its CRD declares them
 * (github.com/temporalio/temporal-worker-controller, helm/.../temporal.io_temporalworkerdeployments.yaml).
 * The Go module proxy does not serve that module, so the CRD's schema cannot be fetched by version
 * here: the check holds its shape, and the pod template goes through the strict validator.
 */
const TWD_SPEC = new Set([
  'maxVersions',
  'minReadySeconds',
  'progressDeadlineSeconds',
  'replicas',
  'rollout',
  'selector',
  'sunset',
  'template',
  'workerOptions',
]);
const TWD_ROLLOUT = new Set(['gate', 'steps', 'strategy']);
const TWD_WORKER_OPTIONS = new Set(['connection', 'temporalNamespace']);
const TWD_SUNSET = new Set(['deleteDelay', 'scaledownDelay']);

type Twd = {
  metadata: { name: string };
  spec: {
    replicas?: unknown;
    template: Manifest['spec']['template'] & { metadata: { labels?: Record<string, string> } };
    rollout?: { strategy?: string; steps?: { rampPercentage?: unknown; pauseDuration?: unknown }[] } & Record<
      string,
      unknown
    >;
    workerOptions?: Record<string, unknown>;
    sunset?: Record<string, unknown>;
  } & Record<string, unknown>;
};

function workerControllerDeployment(m: Manifest): Manifest {
  const twd = m as unknown as Twd;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'settle-worker' },
    spec: { selector: { matchLabels: twd.spec.template.metadata.labels ?? {} }, template: twd.spec.template },
  } as unknown as Manifest;
}

function workerControllerProblems(checkable: Manifest[], structural: Manifest[], ctx: HelmContext): string[] {
  const problems: string[] = [];
  const twds = structural.filter((m) => m.kind === 'TemporalWorkerDeployment') as unknown as (Twd &
    Manifest)[];
  for (const twd of twds) {
    const where = `TemporalWorkerDeployment ${twd.metadata.name}`;
    if (twd.apiVersion !== 'temporal.io/v1alpha1') problems.push(`${where}: apiVersion ${twd.apiVersion}`);
    const unknown = (fields: Record<string, unknown> | undefined, known: Set<string>, path: string) => {
      for (const key of Object.keys(fields ?? {}))
        if (!known.has(key)) problems.push(`${where}: unknown field "${path}.${key}"`);
    };
    unknown(twd.spec, TWD_SPEC, 'spec');
    unknown(twd.spec.rollout, TWD_ROLLOUT, 'spec.rollout');
    unknown(twd.spec.workerOptions, TWD_WORKER_OPTIONS, 'spec.workerOptions');
    unknown(twd.spec.sunset, TWD_SUNSET, 'spec.sunset');
    if (!Number.isInteger(twd.spec.replicas)) problems.push(`${where}: spec.replicas must be an integer`);
    if (!['Manual', 'AllAtOnce', 'Progressive'].includes(twd.spec.rollout?.strategy ?? ''))
      problems.push(`${where}: spec.rollout.strategy must be Manual, AllAtOnce or Progressive`);
    for (const step of twd.spec.rollout?.steps ?? [])
      if (typeof step.rampPercentage !== 'number' || typeof step.pauseDuration !== 'string')
        problems.push(`${where}: each rollout step needs a number rampPercentage and a string pauseDuration`);
    if (typeof twd.spec.workerOptions?.connection !== 'string' || !twd.spec.workerOptions.connection)
      problems.push(`${where}: spec.workerOptions.connection (a TemporalConnection) is required`);
    const namespace = checkable.find((m) => m.kind === 'ConfigMap')?.data?.TEMPORAL_NAMESPACE;
    if (twd.spec.workerOptions?.temporalNamespace !== namespace)
      problems.push(`${where}: spec.workerOptions.temporalNamespace is not settle's TEMPORAL_NAMESPACE`);
  }
  // The rest of settle's settings hold for the Deployment the controller makes of the template;
  // the controller does the scaling (no ScaledObject, no PDB of ours).
  const expectedAbsent = [
    /no ScaledObject for settle-worker/,
    /ScaledObject/,
    /PodDisruptionBudget settle-worker/,
  ];
  for (const p of ctx.settingsProblems(checkable, ctx.version))
    if (!expectedAbsent.some((re) => re.test(p))) problems.push(p);
  if (
    checkable.some((m) => m.kind === 'ScaledObject' && m.spec.scaleTargetRef.name.startsWith('settle-worker'))
  )
    problems.push('a ScaledObject for the workers beside the Worker Controller (it owns the Deployments)');
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The Prometheus Operator's objects

function monitoringProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  type Monitor = {
    spec: { selector?: { matchLabels?: Record<string, string> }; endpoints?: { port?: string }[] };
  };
  const monitor = manifests.find((m) => m.kind === 'ServiceMonitor') as unknown as
    (Manifest & Monitor) | undefined;
  const rule = manifests.find((m) => m.kind === 'PrometheusRule') as unknown as
    (Manifest & { spec: { groups?: unknown } }) | undefined;
  if (!monitor) problems.push('no ServiceMonitor');
  if (!rule) problems.push('no PrometheusRule');
  if (monitor) {
    if (monitor.apiVersion !== 'monitoring.coreos.com/v1')
      problems.push(`ServiceMonitor: apiVersion ${monitor.apiVersion}`);
    for (const key of Object.keys(monitor.spec))
      if (!['selector', 'endpoints', 'namespaceSelector', 'jobLabel'].includes(key))
        problems.push(`ServiceMonitor: unexpected field spec.${key}`);
    const selector = monitor.spec.selector?.matchLabels ?? {};
    const service = manifests.find(
      (m) =>
        m.kind === 'Service' &&
        Object.entries(selector).every(
          ([k, v]) => (m.metadata as { labels?: Record<string, string> }).labels?.[k] === v,
        ),
    ) as unknown as { spec: { ports: { name: string }[] } } | undefined;
    if (!service) problems.push('ServiceMonitor: its selector matches no Service');
    for (const endpoint of monitor.spec.endpoints ?? [])
      if (!service?.spec.ports.some((p) => p.name === endpoint.port))
        problems.push(`ServiceMonitor: endpoint port ${endpoint.port} is no port of the Service`);
  }
  if (rule) {
    if (rule.apiVersion !== 'monitoring.coreos.com/v1')
      problems.push(`PrometheusRule: apiVersion ${rule.apiVersion}`);
    const source = parse(
      readFileSync(join(PROJECT_ROOT, 'deploy', 'monitoring', 'settle-alerts.yml'), 'utf8'),
    ) as {
      groups: unknown;
    };
    const difference = firstDifference(rule.spec.groups, source.groups, 'groups');
    if (difference)
      problems.push(
        `PrometheusRule: its groups are not deploy/monitoring/settle-alerts.yml's (${difference})`,
      );
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The comparison with kustomize

/**
 * The objects both render, normalised: kustomize's hash suffixes and labels, Helm's checksum
 * annotations, standard labels (in selectors and pod templates too) and namespaces aside, lists keyed by name in name order. Each difference a sentence.
 */
export function compare(helm: Manifest[], kustomize: Manifest[]): string[] {
  const problems: string[] = [];
  const index = (manifests: Manifest[]) =>
    new Map(
      manifests
        .filter((m) => m.kind !== 'Secret')
        .map((m) => {
          const n = normalise(m) as Manifest;
          return [`${n.kind} ${n.metadata.name}`, n] as const;
        }),
    );
  const h = index(helm);
  const k = index(kustomize);
  for (const key of k.keys())
    if (!h.has(key)) problems.push(`${key}: kustomize renders it, the chart does not`);
  for (const key of h.keys())
    if (!k.has(key)) problems.push(`${key}: the chart renders it, kustomize does not`);
  for (const [key, object] of h) {
    const other = k.get(key);
    if (!other) continue;
    const difference = firstDifference(object, other, '');
    if (difference) problems.push(`${key}: ${difference}`);
  }
  return problems;
}

function normalise(value: unknown, path: string[] = []): unknown {
  if (typeof value === 'string') return value.replace(HASH_SUFFIX, '$1');
  if (Array.isArray(value)) {
    const items = value.map((v) => normalise(v, path));
    const named = items.every((v) => v && typeof v === 'object' && 'name' in (v as object));
    return named
      ? [...items].sort((a, b) =>
          String((a as { name: string }).name).localeCompare((b as { name: string }).name),
        )
      : items;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const at = [...path, key];
      const where = at.join('.');
      if (where === 'metadata.labels' || where === 'metadata.namespace' || where === 'metadata.annotations')
        continue;
      if (key === 'checksum/config' || HELM_STANDARD_LABELS.has(key)) continue;
      const n = normalise(v, at);
      // An annotations map left empty once Helm's checksum is set aside is no annotations.
      if (key === 'annotations' && n && typeof n === 'object' && !Object.keys(n).length) continue;
      out[key] = n;
    }
    return out;
  }
  return value;
}

function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${path || '.'}: chart ${JSON.stringify(a)}, kustomize ${JSON.stringify(b)}`;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length)
      return `${path}: chart has ${a.length} items, kustomize ${b.length}: chart ${JSON.stringify(a)}, kustomize ${JSON.stringify(b)}`;
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (a && typeof a === 'object') {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    for (const key of new Set([...Object.keys(ao), ...Object.keys(bo)])) {
      const d = firstDifference(ao[key], bo[key], `${path}.${key}`);
      if (d) return d;
    }
    return undefined;
  }
  // Kubernetes reads '1' and 1 alike only for quantities; anything else must match exactly.
  return a === b ? undefined : `${path}: chart ${JSON.stringify(a)}, kustomize ${JSON.stringify(b)}`;
}
