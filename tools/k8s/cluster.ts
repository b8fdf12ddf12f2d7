/**
 * A real Kubernetes control plane on this machine, for `npm run k8s:check`: etcd (Debian's
 * etcd-server), kube-apiserver, kube-controller-manager and kube-scheduler built from
 * k8s.io/kubernetes on the Go module proxy, and KWOK's controller for simulated nodes (no kubelet:
 * pods are scheduled, made Ready, completed and deleted by KWOK's stages, never run). Built once into
 * `.tools/k8s-<version>/` with Helm beside them, as the Temporal server is.
 *
 * k8s.io/kubernetes replaces its k8s.io/* dependencies with `./staging/...` folders the module proxy
 * does not serve: a wrapper module generated here requires it and maps each replace directive to the
 * published module of the same minor (k8s.io/api v0.37.2 for v1.37.2), so `go build` builds the
 * released commands. Helm and KWOK share that module, so their k8s.io/* packages compile once.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync, openSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';
import { buildInto, goRun, HELM_VERSION, moduleSource } from '../../testkit/binaries';
import { freePorts } from '../../testkit/free-port';

export const KUBERNETES_VERSION = '1.37.2';
export const KWOK_VERSION = '0.8.0';
/** The CRDs the chart uses, from the modules that publish them (go mod download). */
const CRD_SOURCES = [
  {
    module: 'github.com/kedacore/keda/v2@v2.21.0',
    files: [
      'config/crd/bases/keda.sh_scaledobjects.yaml',
      'config/crd/bases/keda.sh_triggerauthentications.yaml',
    ],
  },
  {
    module: 'github.com/prometheus-operator/prometheus-operator@v0.85.0',
    files: [
      'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
      'example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml',
    ],
  },
];
/** KWOK's own stages: nodes come up Ready and keep a lease; pods become Ready, Job pods complete. */
const KWOK_STAGES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'kustomize/stage/pod/fast/pod-ready.yaml',
  'kustomize/stage/pod/fast/pod-complete.yaml',
  'kustomize/stage/pod/fast/pod-delete.yaml',
];

export const toolsDir = () =>
  join(PROJECT_ROOT, '.tools', `k8s-${KUBERNETES_VERSION}-kwok-${KWOK_VERSION}-helm-${HELM_VERSION}`);

export type KubeTools = { bin: (name: string) => string; crds: string[]; kwokStages: string };

function toolsIn(): KubeTools {
  const dir = toolsDir();
  const crds = CRD_SOURCES.flatMap((s) =>
    s.files.map((f) => join(dir, 'crds', f.split('/').pop() as string)),
  );
  return { bin: (name) => join(dir, 'bin', name), crds, kwokStages: join(dir, 'kwok-stages.yaml') };
}

/** The wrapper module's go.mod: the commands' modules, and k8s.io/kubernetes's replaces mapped. */
export function wrapperGoMod(kubernetesGoMod: string): string {
  const minor = `v0.${KUBERNETES_VERSION.split('.').slice(1).join('.')}`;
  // The staging modules it requires (at v0.0.0, each replaced by a ./staging folder upstream).
  const staging = [...kubernetesGoMod.matchAll(/^\s*(k8s\.io\/\S+) v0\.0\.0(?=\s|$)/gm)].map(
    (m) => m[1] ?? '',
  );
  if (!staging.length)
    throw new Error(`k8s.io/kubernetes v${KUBERNETES_VERSION}: no staging requirements found`);
  return [
    'module settle.local/k8s-tools',
    '',
    'go 1.26.0',
    '',
    'require (',
    `\tk8s.io/kubernetes v${KUBERNETES_VERSION}`,
    `\tsigs.k8s.io/kwok v${KWOK_VERSION}`,
    `\thelm.sh/helm/v4 v${HELM_VERSION}`,
    ')',
    '',
    'replace (',
    ...[...new Set(staging)].map((m) => `\t${m} => ${m} ${minor}`),
    ')',
    '',
  ].join('\n');
}

const COMMANDS = [
  'k8s.io/kubernetes/cmd/kube-apiserver',
  'k8s.io/kubernetes/cmd/kube-controller-manager',
  'k8s.io/kubernetes/cmd/kube-scheduler',
  'sigs.k8s.io/kwok/cmd/kwok',
  'helm.sh/helm/v4/cmd/helm',
];

/** The built control plane, KWOK and Helm, building them first if `.tools/` lacks them. */
export async function ensureKubeTools(log: (line: string) => void): Promise<KubeTools> {
  const dir = toolsDir();
  if (existsSync(join(dir, '.complete'))) return toolsIn();
  await buildInto(dir, log, async (go) => {
    const kubernetes = await moduleSource(go, `k8s.io/kubernetes@v${KUBERNETES_VERSION}`);
    writeFileSync(join(go.cwd, 'go.mod'), wrapperGoMod(readFileSync(join(kubernetes, 'go.mod'), 'utf8')));
    writeFileSync(
      join(go.cwd, 'tools.go'),
      `//go:build tools\n\npackage tools\n\nimport (\n${COMMANDS.map((c) => `\t_ "${c}"`).join('\n')}\n)\n`,
    );
    await goRun(go, ['mod', 'tidy'], log);
    const ldflags = [
      '-s -w',
      `-X k8s.io/component-base/version.gitVersion=v${KUBERNETES_VERSION}`,
      `-X k8s.io/component-base/version.gitMajor=${KUBERNETES_VERSION.split('.')[0]}`,
      `-X k8s.io/component-base/version.gitMinor=${KUBERNETES_VERSION.split('.')[1]}`,
      '-X k8s.io/component-base/version.gitTreeState=clean',
      `-X helm.sh/helm/v4/internal/version.version=v${HELM_VERSION}`,
      `-X sigs.k8s.io/kwok/pkg/consts.Version=v${KWOK_VERSION}`,
    ].join(' ');
    const out = join(go.work, 'bin') + '/';
    await goRun(
      go,
      ['build', '-v', '-p', '2', '-trimpath', '-ldflags', ldflags, '-o', out, ...COMMANDS],
      log,
    );
    const kwok = await moduleSource(go, `sigs.k8s.io/kwok@v${KWOK_VERSION}`);
    writeFileSync(
      join(go.work, 'kwok-stages.yaml'),
      KWOK_STAGES.map((f) => readFileSync(join(kwok, f), 'utf8').trim()).join('\n---\n') + '\n',
    );
    mkdirSync(join(go.work, 'crds'));
    for (const source of CRD_SOURCES) {
      const root = await moduleSource(go, source.module);
      for (const file of source.files)
        copyFileSync(join(root, file), join(go.work, 'crds', file.split('/').pop() as string));
    }
  });
  return toolsIn();
}

// ---------------------------------------------------------------------------------------------
// The cluster

export type Cluster = {
  kubeconfig: string;
  api: Api;
  /** Logs of each process, for a failure's report. */
  logs: string;
  stop: () => Promise<void>;
};

export type Api = <T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
) => Promise<{ status: number; body: T }>;

/**
 * The API server's REST API with the admin token. A fresh connection per request (no keep-alive: a
 * kept socket the server has closed hangs up on reuse), and a request that fails on the connection
 * is sent again, twice at most: reads, and writes whose repeats answer 409, are safe to repeat.
 */
function api(port: number, token: string): Api {
  const once = oneRequest(port, token);
  return async (method, path, body, contentType) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(method, path, body, contentType);
      } catch (error) {
        if (attempt >= 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  };
}

function oneRequest(port: number, token: string): Api {
  return (method, path, body, contentType = 'application/json') =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          // The API server's own self-signed certificate, on loopback only.
          rejectUnauthorized: false,
          agent: false,
          timeout: 30_000,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': contentType }),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // not JSON: kept as text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed as never });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
}

export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function etcdBinary(): string {
  const found = spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).stdout.trim();
  if (!found)
    throw new Error(
      'etcd is not installed: apt-get install etcd-server (Debian), then run npm run k8s:check again',
    );
  return found;
}

/** Starts etcd, the API server, the controller manager, the scheduler and KWOK with `nodes` nodes. */
export async function startCluster(
  tools: KubeTools,
  work: string,
  nodes: number,
  log: (line: string) => void,
): Promise<Cluster> {
  const [etcdClient, etcdPeer, apiPort, kcmPort, schedulerPort, kwokPort] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const token = randomBytes(24).toString('hex');
  const pki = join(work, 'pki');
  mkdirSync(pki, { recursive: true });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(pki, 'sa.key'), privateKey.export({ type: 'pkcs1', format: 'pem' }));
  writeFileSync(join(pki, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(join(pki, 'tokens.csv'), `${token},settle-k8s-check,settle-k8s-check,"system:masters"\n`);
  const kubeconfig = join(work, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '  - name: check',
      '    cluster:',
      `      server: https://127.0.0.1:${apiPort}`,
      '      insecure-skip-tls-verify: true',
      'users:',
      '  - name: admin',
      '    user:',
      `      token: ${token}`,
      'contexts:',
      '  - name: check',
      '    context: { cluster: check, user: admin }',
      'current-context: check',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );

  const children: { name: string; child: ChildProcess }[] = [];
  const logFile = (name: string) => join(work, `${name}.log`);
  const start = (name: string, command: string, args: string[]) => {
    const out = openSync(logFile(name), 'a');
    const child = spawn(command, args, { stdio: ['ignore', out, out], detached: false });
    children.push({ name, child });
    child.once('exit', (code, signal) => {
      if (!stopping) log(`k8s: ${name} exited (${code ?? signal}); its log: ${logFile(name)}`);
    });
  };
  let stopping = false;
  const stop = async () => {
    stopping = true;
    for (const { child } of [...children].reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGTERM');
      const exited = await Promise.race([
        new Promise<boolean>((resolve) => child.once('exit', () => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
      ]);
      if (!exited) child.kill('SIGKILL');
    }
  };

  try {
    start('etcd', etcdBinary(), [
      '--name=check',
      `--data-dir=${join(work, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=check=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
    ]);
    start('kube-apiserver', tools.bin('kube-apiserver'), [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // No Endpoints for the API server's own Service: its address is loopback, which they refuse.
      '--endpoint-reconciler-type=none',
      `--cert-dir=${pki}`,
      `--token-auth-file=${join(pki, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      // Addresses the API server allocates to Services in etcd; nothing routes to them here.
      '--service-cluster-ip-range=10.96.0.0/16',
      '--profiling=false',
    ]);
    const call = api(apiPort, token);
    await until('the API server ready', 180_000, async () =>
      (await call('GET', '/readyz')).status === 200 ? true : undefined,
    );
    log(`k8s: kube-apiserver v${KUBERNETES_VERSION} ready on 127.0.0.1:${apiPort}`);
    start('kube-controller-manager', tools.bin('kube-controller-manager'), [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--secure-port=${kcmPort}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${join(pki, 'apiserver.crt')}`,
      '--use-service-account-credentials=false',
      // KWOK's node heartbeats come late under load: a node seen stale would have its pods marked
      // NotReady for good (KWOK makes only Pending pods Ready), so the grace is long.
      '--node-monitor-grace-period=10m',
      '--profiling=false',
    ]);
    start('kube-scheduler', tools.bin('kube-scheduler'), [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--secure-port=${schedulerPort}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
      '--profiling=false',
    ]);
    start('kwok', tools.bin('kwok'), [
      `--kubeconfig=${kubeconfig}`,
      `--config=${tools.kwokStages}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      // Addresses KWOK writes into pod and node status; nothing listens on them.
      '--cidr=10.244.0.0/16',
      '--node-ip=10.0.0.1',
      '--node-lease-duration-seconds=40',
      `--server-address=127.0.0.1:${kwokPort}`,
    ]);
    for (let i = 0; i < nodes; i++) {
      const name = `kwok-node-${i}`;
      const created = await call('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: {
            'kubernetes.io/hostname': name,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            'topology.kubernetes.io/zone': `zone-${i % 3}`,
            type: 'kwok',
          },
        },
        status: {
          allocatable: { cpu: '16', memory: '64Gi', pods: '110' },
          capacity: { cpu: '16', memory: '64Gi', pods: '110' },
        },
      });
      if (created.status !== 201)
        throw new Error(`creating node ${name}: ${created.status} ${JSON.stringify(created.body)}`);
    }
    await until(`${nodes} KWOK nodes Ready`, 120_000, async () => {
      const list = await call<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(
        'GET',
        '/api/v1/nodes',
      );
      const ready = list.body.items.filter((n) =>
        n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready.length === nodes ? true : undefined;
    });
    // The namespace "default" has its ServiceAccount once the controller manager runs.
    await until('the controller manager at work (default ServiceAccount)', 120_000, async () =>
      (await call('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200
        ? true
        : undefined,
    );
    log(`k8s: ${nodes} KWOK nodes Ready; controller manager and scheduler running`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { kubeconfig, api: api(apiPort, token), logs: work, stop };
}
