/** The parts of a rendered Kubernetes object the manifest checks read (check.ts, rollout-check.ts). */
export type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
  };
};
export type Probe = { httpGet?: { path: string; port: string | number } };
export type Container = {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
};
export type PodSpec = {
  containers: Container[];
  initContainers?: Container[];
  volumes?: {
    name: string;
    emptyDir?: { sizeLimit?: string };
    secret?: { secretName: string; items?: { key: string; path: string }[] };
  }[];
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    seccompProfile?: { type: string };
  };
};
export type Trigger = { type: string; name?: string; metadata: Record<string, string> };
export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec: {
    template: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
    scaleTargetRef: { name: string };
    minReplicas?: number;
    minReplicaCount?: number;
    metrics?: { resource?: { name: string; target: { averageUtilization?: number } } }[];
    triggers: Trigger[];
    maxUnavailable?: number | string;
    selector?: { matchLabels?: Record<string, string> };
  };
};
