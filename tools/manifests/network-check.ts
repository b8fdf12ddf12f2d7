import type { Manifest } from './manifest';

/**
 * The NetworkPolicy graph of the rendered objects against the table of docs/deployment.md ("Network
 * policies"): a default deny in settle's namespace, then for each role exactly the traffic it needs,
 * each failure a sentence. A role's allowed traffic is the union of the rules of every policy that
 * selects its pods (Kubernetes' own semantics: policies add up); each peer is named by what it
 * selects, so a rule that lets in anyone, or a peer nobody named, is reported as such.
 */
export function networkProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const policies = manifests.filter((m) => m.kind === 'NetworkPolicy') as unknown as NetworkPolicy[];
  const config =
    manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name.startsWith('settle-config'))?.data ?? {};

  const denyAll = policies.find(
    (p) =>
      isEmptySelector(p.spec.podSelector) &&
      (p.spec.policyTypes ?? []).includes('Ingress') &&
      (p.spec.policyTypes ?? []).includes('Egress') &&
      !p.spec.ingress?.length &&
      !p.spec.egress?.length,
  );
  if (!denyAll)
    problems.push('no default-deny NetworkPolicy (podSelector {}, policyTypes Ingress and Egress, no rules)');

  const port = config.PORT ?? '8080';
  const metrics = config.SETTLE_METRICS_PORT ?? '9464';
  const gatewayMetrics = config.SETTLE_GATEWAY_METRICS_PORT ?? metrics;
  const codec = config.SETTLE_CODEC_PORT ?? '8235';
  const temporalPort = (config.TEMPORAL_ADDRESS ?? ':7233').split(':').pop() ?? '7233';
  // Temporal in the cluster (Temporal's Helm chart's frontend pods) or outside it (Temporal Cloud).
  const temporal = /\.svc(\.cluster\.local)?:\d+$/.test(config.TEMPORAL_ADDRESS ?? '')
    ? 'temporal-frontend'
    : 'public';
  const dns = ['dns:53/UDP', 'dns:53/TCP'];
  const egressCore = [`${temporal}:${temporalPort}/TCP`, 'postgres:5432/TCP', ...dns];
  const table: Record<string, { ingress: string[]; egress: string[] }> = {
    gateway: {
      ingress: [`ingress-controller:${port}/TCP`, `monitoring:${gatewayMetrics}/TCP`],
      // The providers' APIs (PayPal's certificate and confirmation): public HTTPS.
      egress: [...egressCore, 'public:443/TCP'],
    },
    worker: { ingress: [`monitoring:${metrics}/TCP`], egress: [...egressCore, 'public:443/TCP'] },
    'codec-server': { ingress: [`temporal-ui:${codec}/TCP`], egress: [] },
    migrate: { ingress: [], egress: egressCore },
  };

  const pods = manifests.flatMap((m) => {
    const labels = (m.spec?.template?.metadata as { labels?: Record<string, string> } | undefined)?.labels;
    const component = labels?.['app.kubernetes.io/component'];
    return labels && component && m.kind !== 'NetworkPolicy' && labels['app.kubernetes.io/name'] === 'settle'
      ? [{ name: `${m.kind} ${m.metadata.name}`, component, labels }]
      : [];
  });
  for (const component of Object.keys(table))
    if (!pods.some((p) => p.component === component)) problems.push(`no pods of role ${component} to check`);
  for (const pod of pods) {
    const expected = table[pod.component];
    if (!expected) {
      problems.push(`${pod.name}: role ${pod.component} is not in the NetworkPolicy table`);
      continue;
    }
    const selecting = policies.filter((p) => selects(p.spec.podSelector, pod.labels));
    for (const direction of ['ingress', 'egress'] as const) {
      const type = direction === 'ingress' ? 'Ingress' : 'Egress';
      const applied = selecting.filter((p) => (p.spec.policyTypes ?? ['Ingress']).includes(type));
      if (!applied.length) {
        problems.push(`${pod.name}: no NetworkPolicy restricts its ${direction} (all allowed)`);
        continue;
      }
      const edges = new Set<string>();
      for (const policy of applied)
        for (const rule of policy.spec[direction] ?? []) {
          const peers = (direction === 'ingress' ? rule.from : rule.to) ?? [];
          const names = peers.length ? peers.map((peer) => peerName(peer, direction)) : ['anyone'];
          const ports = rule.ports?.length
            ? rule.ports.map((p) => `${p.port ?? 'any'}/${p.protocol ?? 'TCP'}`)
            : ['any'];
          for (const name of names) for (const p of ports) edges.add(`${name}:${p}`);
        }
      const want = new Set(expected[direction]);
      for (const edge of edges)
        if (!want.has(edge)) problems.push(`${pod.name}: ${direction} allows ${edge}, not in the table`);
      for (const edge of want)
        if (!edges.has(edge)) problems.push(`${pod.name}: ${direction} lacks ${edge} (the table's)`);
    }
  }
  return problems;
}

type Selector = {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
};
type Peer = {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: { cidr: string; except?: string[] };
};
type Rule = { from?: Peer[]; to?: Peer[]; ports?: { port?: number | string; protocol?: string }[] };
type NetworkPolicy = {
  metadata: { name: string };
  spec: { podSelector: Selector; policyTypes?: string[]; ingress?: Rule[]; egress?: Rule[] };
};

const isEmptySelector = (s: Selector | undefined) =>
  !s || (!Object.keys(s.matchLabels ?? {}).length && !(s.matchExpressions ?? []).length);

function selects(selector: Selector, labels: Record<string, string>): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e) => {
    const value = labels[e.key];
    if (e.operator === 'In') return value !== undefined && (e.values ?? []).includes(value);
    if (e.operator === 'NotIn') return value === undefined || !(e.values ?? []).includes(value);
    if (e.operator === 'Exists') return value !== undefined;
    if (e.operator === 'DoesNotExist') return value === undefined;
    return false;
  });
  return byLabels && byExpressions;
}

const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'];

/** The peer's name in the table, from what it selects; `unknown <json>` for anything else. */
function peerName(peer: Peer, direction: 'ingress' | 'egress'): string {
  const ns = peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'];
  const pods = peer.podSelector?.matchLabels ?? {};
  const only = (labels: Record<string, string>) =>
    JSON.stringify(Object.entries(pods).sort()) === JSON.stringify(Object.entries(labels).sort());
  if (peer.ipBlock) {
    const excepted = new Set(peer.ipBlock.except ?? []);
    return peer.ipBlock.cidr === '0.0.0.0/0' &&
      PRIVATE_RANGES.every((r) => excepted.has(r)) &&
      !peer.namespaceSelector
      ? 'public'
      : `unknown ${JSON.stringify(peer)}`;
  }
  if (!peer.namespaceSelector) return `unknown ${JSON.stringify(peer)} (pods of settle's own namespace)`;
  if (Object.keys(peer.namespaceSelector.matchLabels ?? {}).length !== 1 || !ns)
    return `unknown ${JSON.stringify(peer)}`;
  if (ns === 'kube-system' && only({ 'k8s-app': 'kube-dns' }) && direction === 'egress') return 'dns';
  if (ns === 'monitoring' && only({}) && direction === 'ingress') return 'monitoring';
  if (ns === 'ingress-nginx' && only({}) && direction === 'ingress') return 'ingress-controller';
  if (ns === 'postgres' && only({}) && direction === 'egress') return 'postgres';
  if (
    ns === 'temporal' &&
    only({ 'app.kubernetes.io/name': 'temporal', 'app.kubernetes.io/component': 'frontend' })
  )
    return 'temporal-frontend';
  if (
    ns === 'temporal' &&
    only({ 'app.kubernetes.io/name': 'temporal', 'app.kubernetes.io/component': 'web' })
  )
    return 'temporal-ui';
  return `unknown ${JSON.stringify(peer)}`;
}

/** Broken copies the network check must refuse, each naming its fault. */
export const NETWORK_FAULTS: { name: string; expect: RegExp; edit: (m: Manifest[]) => Manifest[] }[] = [
  {
    name: 'no default deny',
    expect: /no default-deny NetworkPolicy/,
    edit: (m) => m.filter((x) => !(x.kind === 'NetworkPolicy' && x.metadata.name.endsWith('default-deny'))),
  },
  {
    name: 'the codec server reachable from anyone',
    expect: /codec-server: ingress allows anyone:8235\/TCP/,
    edit: (m) =>
      policy(m, 'codec-server', (p) => {
        delete p.spec.ingress![0]!.from;
      }),
  },
  {
    name: 'a worker without egress to the targets',
    expect: /worker: egress lacks public:443\/TCP/,
    edit: (m) =>
      policy(m, 'worker', (p) => (p.spec.egress = p.spec.egress!.filter((r) => !r.to?.[0]?.ipBlock))),
  },
  {
    name: "a gateway without egress to the providers' APIs",
    expect: /gateway: egress lacks public:443\/TCP/,
    edit: (m) =>
      policy(m, 'gateway', (p) => (p.spec.egress = p.spec.egress!.filter((r) => !r.to?.[0]?.ipBlock))),
  },
  {
    name: 'the migration Job open to the public too',
    expect: /migrate[-0-9]*: egress allows public:443\/TCP/,
    edit: (m) =>
      policy(m, 'migrate', (p) =>
        p.spec.egress!.push({
          to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_RANGES } }],
          ports: [{ port: 443, protocol: 'TCP' }],
        }),
      ),
  },
];

function policy(manifests: Manifest[], component: string, change: (p: NetworkPolicy) => unknown): Manifest[] {
  const copy = structuredClone(manifests);
  const target = (copy.filter((m) => m.kind === 'NetworkPolicy') as unknown as NetworkPolicy[]).find(
    (p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/component'] === component,
  );
  if (!target) throw new Error(`no NetworkPolicy of ${component} to break`);
  change(target);
  return copy;
}
