import type { Manifest } from './manifest';
import { failureList } from '../../testkit/checks';

/**
 * What a rollout of workflow code with Worker Deployments needs of the rendered objects (the
 * `rollout` overlay; docs/deployment.md, "Upgrades"), each failure a sentence: every worker
 * Deployment sets its own SETTLE_BUILD_ID; its pods carry a label no other build's selector matches,
 * so its PodDisruptionBudget and its KEDA ScaledObject count only them; and each ScaledObject scales
 * its Deployment on that build's backlog (`workerDeploymentName`/`workerDeploymentBuildId`, or their
 * `FromEnv` forms read from the Deployment). `eachBuildProblems` applies the base's settings check to
 * every build's Deployment.
 */
export function rolloutProblems(manifests: Manifest[]): string[] {
  const { failures: problems, expect } = failureList();
  const config =
    manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name.startsWith('settle-config'))?.data ?? {};
  const workers = workerDeployments(manifests);
  expect(workers.length >= 2, `a rollout has a worker Deployment per build, found ${workers.length}`);
  const builds = new Map<string, string>();
  for (const worker of workers) {
    const name = worker.metadata.name;
    const settle = worker.spec.template.spec.containers.find((c) => c.name === 'settle');
    const buildId = settle?.env?.find((e) => e.name === 'SETTLE_BUILD_ID')?.value;
    expect(Boolean(buildId), `${name}: no SETTLE_BUILD_ID: a worker of a rollout polls as its build`);
    if (!buildId) continue;
    expect(!builds.has(buildId), `${name}: build ${buildId} is also ${builds.get(buildId)}'s`);
    builds.set(buildId, name);

    const selector = worker.spec.selector?.matchLabels ?? {};
    for (const other of workers.filter((w) => w !== worker)) {
      const labels = podLabels(other);
      expect(
        !Object.entries(selector).every(([key, value]) => labels[key] === value),
        `${name}: its selector also matches ${other.metadata.name}'s pods`,
      );
    }
    const pdb = manifests.find(
      (m) =>
        m.kind === 'PodDisruptionBudget' &&
        JSON.stringify(m.spec.selector?.matchLabels) === JSON.stringify(selector),
    );
    expect(pdb !== undefined, `${name}: no PodDisruptionBudget with its selector`);

    const scaled = manifests.find((m) => m.kind === 'ScaledObject' && m.spec.scaleTargetRef.name === name);
    expect(scaled !== undefined, `${name}: no ScaledObject`);
    const env: Record<string, string> = { ...config };
    for (const e of settle?.env ?? []) env[e.name] = e.value ?? '';
    for (const t of scaled?.spec.triggers.filter((t) => t.type === 'temporal') ?? []) {
      const deployment = t.metadata.workerDeploymentNameFromEnv
        ? env[t.metadata.workerDeploymentNameFromEnv]
        : t.metadata.workerDeploymentName;
      const build = t.metadata.workerDeploymentBuildIdFromEnv
        ? env[t.metadata.workerDeploymentBuildIdFromEnv]
        : t.metadata.workerDeploymentBuildId;
      expect(
        build === buildId,
        `${name}: trigger ${t.name} counts build ${build ?? 'none'}'s backlog, not ${buildId}'s`,
      );
      expect(
        deployment === (env.SETTLE_DEPLOYMENT_NAME || 'settle'),
        `${name}: trigger ${t.name} counts Worker Deployment ${deployment ?? 'none'}, not SETTLE_DEPLOYMENT_NAME's`,
      );
    }
  }
  return problems;
}

/**
 * The base's settings check on each build's objects, given under the base's name (settle-worker):
 * the next build's worker runs its own image (tagged with its build ID), not package.json's version.
 */
export function eachBuildProblems(
  manifests: Manifest[],
  version: string,
  settingsProblems: (manifests: Manifest[], version: string) => string[],
): string[] {
  return asSingleBuild(manifests).flatMap(({ buildId, manifests: build }) =>
    settingsProblems(build, version)
      .filter((problem) => !(buildId && problem.includes(`image settle:${buildId}, not settle:${version}`)))
      .map((problem) => `build ${buildId ?? 'unversioned'}: ${problem}`),
  );
}

/** One copy of the objects per build: that build's worker objects under the base's name (settle-worker). */
function asSingleBuild(manifests: Manifest[]): { buildId: string | undefined; manifests: Manifest[] }[] {
  return workerDeployments(manifests).map((worker) => {
    const keep = worker.metadata.name;
    const buildId = worker.spec.template.spec.containers
      .find((c) => c.name === 'settle')
      ?.env?.find((e) => e.name === 'SETTLE_BUILD_ID')?.value;
    return {
      buildId,
      manifests: manifests
        .filter((m) => !isWorkerObject(m) || objectWorker(m) === keep)
        .map((m) => {
          if (!isWorkerObject(m)) return m;
          const copy = structuredClone(m);
          copy.metadata.name = 'settle-worker';
          if (copy.kind === 'ScaledObject') copy.spec.scaleTargetRef.name = 'settle-worker';
          return copy;
        }),
    };
  });
}

const isWorkerName = (name: string) => name === 'settle-worker' || name.startsWith('settle-worker-');

function workerDeployments(manifests: Manifest[]): Manifest[] {
  return manifests.filter((m) => m.kind === 'Deployment' && isWorkerName(m.metadata.name));
}

function isWorkerObject(m: Manifest): boolean {
  return (
    ['Deployment', 'PodDisruptionBudget', 'ScaledObject'].includes(m.kind) && isWorkerName(m.metadata.name)
  );
}

/** The worker Deployment an object belongs to (its own name, or the one it scales). */
function objectWorker(m: Manifest): string {
  return m.kind === 'ScaledObject' ? m.spec.scaleTargetRef.name : m.metadata.name;
}

function podLabels(m: Manifest): Record<string, string> {
  return (m.spec.template.metadata as { labels?: Record<string, string> }).labels ?? {};
}

/** Broken copies of the rendered rollout: each must be refused by rolloutProblems, naming its fault. */
export const ROLLOUT_FAULTS: { name: string; expect: RegExp; edit: (m: Manifest[]) => Manifest[] }[] = [
  {
    name: "a ScaledObject counting another build's backlog",
    expect: /trigger live-backlog counts build 0\.1\.0's backlog, not 0\.2\.0's/,
    edit: (m) =>
      editBuild(m, 'ScaledObject', 'settle-worker-0-2-0', (s) => {
        const trigger = s.spec.triggers.find((t) => t.name === 'live-backlog')!;
        delete trigger.metadata.workerDeploymentBuildIdFromEnv;
        trigger.metadata.workerDeploymentBuildId = '0.1.0';
      }),
  },
  {
    name: 'a worker Deployment without SETTLE_BUILD_ID',
    expect: /settle-worker-0-2-0: no SETTLE_BUILD_ID/,
    edit: (m) =>
      editBuild(m, 'Deployment', 'settle-worker-0-2-0', (d) => {
        const settle = d.spec.template.spec.containers.find((c) => c.name === 'settle')!;
        settle.env = settle.env?.filter((e) => e.name !== 'SETTLE_BUILD_ID');
      }),
  },
  {
    name: "a selector matching the other build's pods",
    expect: /its selector also matches/,
    edit: (m) =>
      editBuild(m, 'Deployment', 'settle-worker-0-2-0', (d) => {
        delete d.spec.selector!.matchLabels!['app.kubernetes.io/version'];
      }),
  },
];

function editBuild(
  manifests: Manifest[],
  kind: string,
  name: string,
  change: (m: Manifest) => void,
): Manifest[] {
  const copy = structuredClone(manifests);
  const target = copy.find((m) => m.kind === kind && m.metadata.name === name);
  if (!target) throw new Error(`no ${kind} ${name} to break`);
  change(target);
  return copy;
}
