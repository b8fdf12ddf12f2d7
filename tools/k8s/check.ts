/**
 * `npm run k8s:check`: installs the Helm chart deploy/helm/settle into a real Kubernetes API server on
 * this machine (cluster.ts: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK's
 * simulated nodes) and checks what rendering and schema validation cannot: admission, defaulting,
 * the CRDs' schemas, immutable fields on upgrade, scheduling, garbage collection on uninstall.
 *
 * 1. On a cluster without KEDA's or the Prometheus Operator's CRDs, values.yaml installs (the
 *    workers get an HPA instead of a ScaledObject), beside a second release in the same namespace.
 * 2. Then with those CRDs applied, for every shipped values file (and one with every option set):
 *    `helm install --wait` and every Deployment of the release available on the simulated nodes;
 *    `helm test`, whose hook pod must be admitted and scheduled (it cannot pass: no container runs
 *    here); `helm upgrade` with a changed value, every Deployment rolled to the new ConfigMap and
 *    available again; `helm uninstall`, leaving nothing of the release in its namespace.
 *
 * Prints one line per outcome and "N passed, M failed" (testkit/checks.ts); exits 1 on any failure.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { configVariables } from '../../src/config';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { Checks, errorText } from '../../testkit/checks';
import { ensureKubeTools, startCluster, until, type Api, type Cluster } from './cluster';

const CHART = join(PROJECT_ROOT, 'deploy', 'helm', 'settle');
const NODES = 3;
const WAIT = '10m';
/** `helm install` and `upgrade` wait for every object and Job, a bound on a hang. */
const WAIT_ARGS = ['--wait=watcher', '--wait-for-jobs', '--timeout', WAIT];

const checks = new Checks();
const log = (line: string) => process.stderr.write(`${line}\n`);
/** A verdict; `detail` (a command's output) is printed only for a failure. */
const record = (name: string, ok: boolean, detail?: string) =>
  checks.record(name, { failures: ok ? [] : [detail || 'failed'] });

/** Every values file the chart ships, values.yaml first. */
function shippedValuesFiles(): string[] {
  return readdirSync(CHART)
    .filter((f) => /^values(-[a-z-]+)?\.yaml$/.test(f))
    .sort((a, b) => (a === 'values.yaml' ? -1 : b === 'values.yaml' ? 1 : a.localeCompare(b)));
}

/** Values that set every option the chart has beside the defaults, on this check's nodes. */
const EVERY_OPTION = join(__dirname, 'values-every-option.yaml');

type Run = {
  name: string;
  args: string[];
  /** Deployments the release must make available (the Worker Controller makes the workers' itself). */
  deployments: (release: string) => string[];
  /** Whether the cluster serves KEDA's CRDs (else the workers get an HPA). */
  keda: boolean;
};

const ROLES = (release: string) => {
  const prefix = release.includes('settle') ? release : `${release}-settle`;
  return {
    gateway: `${prefix}-gateway`,
    worker: `${prefix}-worker`,
    codec: `${prefix}-codec-server`,
    prefix,
  };
};

// ---------------------------------------------------------------------------------------------

/** Helm against `cluster`, its own config, cache and data under `home`. */
type Helm = (args: string[]) => { ok: boolean; output: string };
const helmOn =
  (cluster: Cluster, helmBin: string, home: string): Helm =>
  (args) => {
    const result = spawnSync(helmBin, args, {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      env: {
        ...process.env,
        KUBECONFIG: cluster.kubeconfig,
        HELM_CONFIG_HOME: join(home, 'config'),
        HELM_CACHE_HOME: join(home, 'cache'),
        HELM_DATA_HOME: join(home, 'data'),
      },
    });
    if (result.error) throw result.error;
    return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() };
  };

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  data?: Record<string, string>;
};

async function list(api: Api, path: string): Promise<Obj[]> {
  const res = await api<{ items?: Obj[] }>('GET', path);
  if (res.status !== 200)
    throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.items ?? [];
}

async function create(api: Api, path: string, object: unknown): Promise<void> {
  const res = await api('POST', path, object);
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
}

/** Every namespaced kind the API server lists (core, groups, CRDs), as list paths with {ns}. */
async function namespacedKinds(api: Api): Promise<string[]> {
  type Resources = { resources: { name: string; namespaced: boolean; verbs: string[] }[] };
  const paths: string[] = [];
  const add = (prefix: string, body: Resources) => {
    for (const r of body.resources)
      if (r.namespaced && !r.name.includes('/') && r.verbs.includes('list') && !/^events$/.test(r.name))
        paths.push(`${prefix}/namespaces/{ns}/${r.name}`);
  };
  add('/api/v1', (await api<Resources>('GET', '/api/v1')).body);
  const groups = await api<{ groups: { preferredVersion: { groupVersion: string } }[] }>('GET', '/apis');
  for (const g of groups.body.groups) {
    const gv = g.preferredVersion.groupVersion;
    if (gv.startsWith('events.k8s.io/')) continue;
    add(`/apis/${gv}`, (await api<Resources>('GET', `/apis/${gv}`)).body);
  }
  return paths;
}

async function snapshot(api: Api, kinds: string[], ns: string): Promise<Set<string>> {
  const names = new Set<string>();
  for (const kind of kinds) {
    const path = kind.replace('{ns}', ns);
    for (const item of await list(api, path)) names.add(`${path.split('/').pop()}/${item.metadata.name}`);
  }
  return names;
}

async function applyCrds(api: Api, files: string[]): Promise<void> {
  for (const file of files)
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const crd = doc.toJS() as Obj | null;
      if (!crd) continue;
      await create(api, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      await until(`CRD ${crd.metadata.name} established`, 60_000, async () => {
        const got = await api<Obj>(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
        );
        const conditions = (got.body.status?.conditions ?? []) as { type: string; status: string }[];
        return conditions.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
      });
    }
}

/**
 * The Temporal Worker Controller's CRD is not on the module proxy: a stand-in that accepts any spec
 * under the same group, version and kind, so values-worker-controller.yaml installs. The fields the
 * chart writes are checked against the controller's schema by npm run manifests:check.
 */
const WORKER_CONTROLLER_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'temporalworkerdeployments.temporal.io' },
  spec: {
    group: 'temporal.io',
    scope: 'Namespaced',
    names: {
      plural: 'temporalworkerdeployments',
      singular: 'temporalworkerdeployment',
      kind: 'TemporalWorkerDeployment',
    },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

/** What an operator creates before `helm install`: the Secrets the chart names (stand-in values). */
async function prepareNamespace(api: Api, ns: string, releases: string[]): Promise<void> {
  await create(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await until(`namespace ${ns}'s default ServiceAccount`, 60_000, async () =>
    (await api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200 ? true : undefined,
  );
  // Every secret variable of settle's configuration (src/config/schema.ts), as the chart's Secret holds them.
  const keys = Object.values(configVariables).flatMap((v) => (v.secret ? [v.name] : []));
  const standIn = Object.fromEntries(keys.map((k) => [k, 'stand-in, never read: no container runs here']));
  const secret = (name: string, stringData: Record<string, string>, type = 'Opaque') =>
    create(api, `/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name },
      type,
      stringData,
    });
  for (const release of releases) await secret(`${ROLES(release).prefix}-secrets`, standIn);
  await secret('settle-postgres', { uri: 'stand-in' });
  await secret('settle-temporal-cloud', { TEMPORAL_API_KEY: 'stand-in' });
  await secret('settle-temporal-tls', { 'tls.crt': '', 'tls.key': '', 'ca.crt': '' });
  await create(api, `/api/v1/namespaces/${ns}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'settle-paypal-cert' },
    data: { 'paypal-cert.pem': 'stand-in' },
  });
}

type Deployment = Obj & {
  spec: { replicas?: number; template: { metadata: { annotations?: Record<string, string> } } };
  status?: {
    replicas?: number;
    availableReplicas?: number;
    updatedReplicas?: number;
    observedGeneration?: number;
    conditions?: { type: string; status: string }[];
  };
};

/** Each named Deployment available: observed, updated, every replica available, on a KWOK node. */
async function deploymentsAvailable(
  api: Api,
  ns: string,
  names: string[],
  timeoutMs: number,
): Promise<string[]> {
  let last: string[] = [];
  try {
    await until('every Deployment available', timeoutMs, async () => {
      last = [];
      for (const name of names) {
        const got = await api<Deployment>('GET', `/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
        if (got.status !== 200) {
          last.push(`${name}: ${got.status}`);
          continue;
        }
        const d = got.body;
        const s = d.status ?? {};
        const want = d.spec.replicas ?? 1;
        if (s.observedGeneration !== d.metadata.generation) last.push(`${name}: generation not observed yet`);
        else if (
          (s.updatedReplicas ?? 0) < want ||
          (s.availableReplicas ?? 0) < want ||
          (s.replicas ?? 0) !== want
        )
          last.push(
            `${name}: ${s.availableReplicas ?? 0}/${want} available, ${s.updatedReplicas ?? 0} updated`,
          );
        else if (!s.conditions?.some((c) => c.type === 'Available' && c.status === 'True'))
          last.push(`${name}: condition Available not True`);
      }
      return last.length ? undefined : true;
    });
  } catch {
    return last.length ? last : ['not available in time'];
  }
  return [];
}

async function podsOnNodes(api: Api, ns: string, selector: string): Promise<string[]> {
  const pods = await list(api, `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`);
  const problems: string[] = [];
  if (!pods.length) problems.push(`no pods match ${selector}`);
  for (const pod of pods) {
    const node = pod.spec?.nodeName as string | undefined;
    if (!node?.startsWith('kwok-node-'))
      problems.push(`pod ${pod.metadata.name} not scheduled (${node ?? 'no node'})`);
  }
  return problems;
}

async function checkRun(cluster: Cluster, helm: Helm, run: Run, ns: string, kinds: string[]) {
  const { api } = cluster;
  const release = 'settle';
  const names = ROLES(release);
  const label = `k8s ${run.name}`;
  await prepareNamespace(api, ns, [release]);
  const before = await snapshot(api, kinds, ns);

  const install = helm(['install', release, CHART, '-n', ns, ...run.args, ...WAIT_ARGS]);
  if (!record(`${label}: helm install --wait`, install.ok, install.output)) return;
  const deployments = run.deployments(release);
  const unavailable = await deploymentsAvailable(api, ns, deployments, 300_000);
  record(
    `${label}: every Deployment available on the simulated nodes (${deployments.join(', ')})`,
    unavailable.length === 0,
    unavailable.join('\n'),
  );
  const unscheduled = await podsOnNodes(
    api,
    ns,
    `app.kubernetes.io/instance=${release},app.kubernetes.io/component in (gateway,worker,codec-server)`,
  );
  record(`${label}: every pod scheduled on a KWOK node`, unscheduled.length === 0, unscheduled.join('\n'));

  if (!run.name.includes('worker-controller')) {
    const scaledObjects = run.keda
      ? await list(api, `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects`)
      : [];
    const hpas = await list(api, `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`);
    const workerHpa = hpas.some((h) => h.metadata.name.startsWith(names.worker));
    record(
      `${label}: the workers scaled by ${run.keda ? "KEDA's ScaledObject" : 'an HPA (no KEDA on the cluster)'}`,
      run.keda
        ? scaledObjects.some((s) => s.metadata.name.startsWith(names.worker)) && !workerHpa
        : workerHpa,
      `ScaledObjects: ${scaledObjects.map((s) => s.metadata.name).join(', ') || 'none'}; HPAs: ${hpas.map((h) => h.metadata.name).join(', ')}`,
    );
  }

  // helm test: the hook's pod must be admitted and scheduled; passing needs a running container.
  const test = helm(['test', release, '-n', ns, '--timeout', '20s']);
  const testPod = await api<Obj>('GET', `/api/v1/namespaces/${ns}/pods/${names.prefix}-test`);
  const testNode = testPod.body.spec?.nodeName as string | undefined;
  record(
    `${label}: helm test's hook pod admitted and scheduled (its checks need real containers)`,
    !test.ok && testPod.status === 200 && Boolean(testNode?.startsWith('kwok-node-')),
    test.ok
      ? 'helm test passed without a running container: impossible here'
      : `${testPod.status} ${testNode ?? ''}\n${test.output}`,
  );
  for (const path of [
    `/api/v1/namespaces/${ns}/pods/${names.prefix}-test`,
    `/api/v1/namespaces/${ns}/services/${names.prefix}-test-worker-health`,
    `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/${names.prefix}-test`,
    `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/${names.prefix}-test-ingress`,
  ])
    await api('DELETE', `${path}?gracePeriodSeconds=0`);

  const configBefore = await list(
    api,
    `/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=app.kubernetes.io/instance=${release}`,
  );
  const upgrade = helm([
    ...['upgrade', release, CHART, '-n', ns, ...run.args, ...WAIT_ARGS],
    ...['--set', 'config.SETTLE_LOG_LEVEL=debug'],
  ]);
  if (
    record(
      `${label}: helm upgrade with a changed value (config.SETTLE_LOG_LEVEL)`,
      upgrade.ok,
      upgrade.output,
    )
  ) {
    const config = await api<Obj>('GET', `/api/v1/namespaces/${ns}/configmaps/${names.prefix}-config`);
    const rolled = (await list(
      api,
      `/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=app.kubernetes.io/instance=${release}`,
    )) as Deployment[];
    const stale = rolled
      .filter((d) => {
        const old = (configBefore as Deployment[]).find((b) => b.metadata.name === d.metadata.name);
        return (
          old?.spec.template.metadata.annotations?.['checksum/config'] ===
          d.spec.template.metadata.annotations?.['checksum/config']
        );
      })
      .map((d) => d.metadata.name);
    const unavailableAfter = await deploymentsAvailable(api, ns, deployments, 300_000);
    record(
      `${label}: the upgrade rolled every Deployment to the new ConfigMap, all available again`,
      config.body.data?.SETTLE_LOG_LEVEL === 'debug' && stale.length === 0 && unavailableAfter.length === 0,
      `ConfigMap SETTLE_LOG_LEVEL ${config.body.data?.SETTLE_LOG_LEVEL}; not rolled: ${stale.join(', ') || 'none'}; ${unavailableAfter.join('; ')}`,
    );
  }

  const uninstall = helm(['uninstall', release, '-n', ns, '--wait', '--timeout', WAIT]);
  if (!record(`${label}: helm uninstall`, uninstall.ok, uninstall.output)) return;
  let left: string[] = [];
  try {
    await until('nothing of the release left', 180_000, async () => {
      const now = await snapshot(api, kinds, ns);
      left = [...now].filter((n) => !before.has(n));
      return left.length ? undefined : true;
    });
  } catch {
    // reported below
  }
  record(
    `${label}: helm uninstall leaves nothing behind in the namespace`,
    left.length === 0,
    `left: ${left.join(', ')}`,
  );
}

/** Two releases of the chart in one namespace: distinct names, each selecting only its own pods. */
async function twoReleases(cluster: Cluster, helm: Helm, ns: string) {
  const { api } = cluster;
  await prepareNamespace(api, ns, ['settle', 'other']);
  const installs = ['settle', 'other'].map((release) =>
    helm(['install', release, CHART, '-n', ns, ...WAIT_ARGS]),
  );
  if (
    !record(
      'k8s two releases in one namespace: both install',
      installs.every((i) => i.ok),
      installs.map((i) => i.output).join('\n'),
    )
  )
    return;
  const problems: string[] = [];
  for (const release of ['settle', 'other']) {
    const r = ROLES(release);
    problems.push(...(await deploymentsAvailable(api, ns, [r.gateway, r.worker, r.codec], 300_000)));
    const pods = await list(
      api,
      `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${release}`)}`,
    );
    const owners = new Set(pods.map((p) => p.metadata.labels?.['app.kubernetes.io/instance']));
    if (owners.size !== 1) problems.push(`${release}'s selector matches pods of ${[...owners].join(', ')}`);
  }
  record(
    'k8s two releases in one namespace: each available, each selecting its own pods',
    problems.length === 0,
    problems.join('\n'),
  );
  for (const release of ['settle', 'other'])
    helm(['uninstall', release, '-n', ns, '--wait', '--timeout', WAIT]);
}

async function main() {
  const started = Date.now();
  const tools = await ensureKubeTools(log);
  const work = mkdtempSync(join(tmpdir(), 'settle-k8s-'));
  const home = join(work, 'helm');
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster(tools, join(work, 'cluster'), NODES, log);
    // Stopped from outside: stop the control plane too, not leave it running.
    const stopped = cluster;
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => void stopped.stop().finally(() => process.exit(130)));
    const { api } = cluster;
    await create(api, '/apis/scheduling.k8s.io/v1/priorityclasses', {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'settle-check' },
      value: 1000,
    });
    const helm = helmOn(cluster, tools.bin('helm'), home);
    const lint = helm(['lint', CHART, '--strict']);
    record('helm lint --strict deploy/helm/settle', lint.ok, lint.output);

    // 1. No KEDA, no Prometheus Operator on the cluster.
    let kinds = await namespacedKinds(api);
    await checkRun(
      cluster,
      helm,
      {
        name: 'values.yaml on a cluster without KEDA or the Prometheus Operator',
        args: [],
        deployments: (r) => Object.values(ROLES(r)).filter((n) => n !== ROLES(r).prefix),
        keda: false,
      },
      'check-no-crds',
      kinds,
    );

    // 2. With the CRDs the chart uses.
    await applyCrds(api, tools.crds);
    await create(api, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WORKER_CONTROLLER_CRD);
    kinds = await namespacedKinds(api);
    log(
      `k8s: CRDs applied: ${tools.crds.map((f) => f.split('/').pop()).join(', ')}, and the Worker Controller's stand-in`,
    );
    await twoReleases(cluster, helm, 'check-two-releases');

    const runs: Run[] = shippedValuesFiles().map((file) => {
      const rollout = file === 'values-rollout.yaml';
      return {
        name: file,
        args: file === 'values.yaml' ? [] : ['-f', join(CHART, file)],
        keda: true,
        deployments: (r: string) => {
          const n = ROLES(r);
          if (file === 'values-worker-controller.yaml') return [n.gateway, n.codec];
          if (rollout) return [n.gateway, n.codec, n.worker, `${n.worker}-0-2-0`];
          return [n.gateway, n.worker, n.codec];
        },
      };
    });
    runs.push({
      name: 'values-mtls.yaml with every option set (Ingress, monitoring, scheduling, extras)',
      args: ['-f', join(CHART, 'values-mtls.yaml'), '-f', EVERY_OPTION],
      keda: true,
      deployments: (r) => [ROLES(r).gateway, ROLES(r).worker, ROLES(r).codec],
    });
    for (const [i, run] of runs.entries()) await checkRun(cluster, helm, run, `check-${i}`, kinds);
  } catch (error) {
    record('the check ran to its end', false, errorText(error, true));
  } finally {
    await cluster?.stop();
    if (checks.failed) log(`k8s: the control plane's logs are kept in ${join(work, 'cluster')}`);
    else rmSync(work, { recursive: true, force: true });
    log(`k8s: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
    checks.summary();
  }
}

if (require.main === module) void main();
