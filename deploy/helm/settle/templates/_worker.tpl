{{/*
The worker's pod template (dict "root" $ "build" <build or nil> "image" <image>): the same for the
per-build Deployments and the Worker Controller's TemporalWorkerDeployment.
*/}}
{{- define "settle.workerPodTemplate" -}}
{{- $root := .root -}}
{{- $keys := include "settle.roleSecretKeys" (dict "root" $root "role" "worker") | fromJsonArray -}}
{{- $c := dict "root" $root "component" "worker" -}}
{{- $role := dict "root" $root "role" $root.Values.worker "component" "worker" -}}
{{- $selector := include "settle.labels" $c -}}
{{- with .build }}{{ $selector = printf "%s\napp.kubernetes.io/version: %s" $selector (.buildId | quote) }}{{ end -}}
metadata:
  labels:
    {{- $selector | nindent 4 }}
    {{- with include "settle.podLabels" $role }}{{ . | nindent 4 }}{{ end }}
  annotations:
    prometheus.io/scrape: 'true'
    prometheus.io/port: {{ $root.Values.config.SETTLE_METRICS_PORT | quote }}
    prometheus.io/path: /metrics
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- with include "settle.podAnnotations" $role }}{{ . | nindent 4 }}{{ end }}
spec:
  automountServiceAccountToken: false
  {{- with include "settle.podScheduling" $role | trim }}{{ . | nindent 2 }}{{ end }}
  enableServiceLinks: false
  # settle drains and exits within its 8 s deadline; 7 s to spare before SIGKILL.
  terminationGracePeriodSeconds: 15
  {{- include "settle.podSecurityContext" . | nindent 2 }}
  {{- with include "settle.topologySpread" (merge (dict "labels" $selector) $role) | trim }}{{ . | nindent 2 }}{{ end }}
  initContainers:
    {{- include "settle.migrateInit" (dict "root" $root "image" .image) | nindent 4 }}
  containers:
    - name: settle
      image: {{ .image }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args: ['worker']
      ports:
        - name: metrics
          containerPort: {{ $root.Values.config.SETTLE_METRICS_PORT | int }}
          protocol: TCP
      envFrom:
        - configMapRef:
            name: {{ include "settle.objectName" (dict "root" $root "suffix" "config") }}
      env:
        {{- with .build }}
        - name: SETTLE_BUILD_ID
          value: {{ .buildId | quote }}
        {{- end }}
        {{- include "settle.secretFiles" (dict "keys" $keys) | nindent 8 }}
        {{- include "settle.temporalEnv" $root | nindent 8 }}
        {{- with include "settle.extra" (dict "root" $root "role" $root.Values.worker "what" "extraEnv") }}{{ . | nindent 8 }}{{ end }}
      startupProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 2
        timeoutSeconds: 2
        failureThreshold: 30
      readinessProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      resources:
        {{- toYaml $root.Values.worker.resources | nindent 8 }}
      {{- include "settle.containerSecurityContext" . | nindent 6 }}
      volumeMounts:
        - name: secrets
          mountPath: /etc/settle/secrets
          readOnly: true
        - name: tmp
          mountPath: /tmp
        {{- include "settle.temporalMounts" $root | nindent 8 }}
        {{- with include "settle.extra" (dict "root" $root "role" $root.Values.worker "what" "extraVolumeMounts") }}{{ . | nindent 8 }}{{ end }}
    {{- with include "settle.extra" (dict "root" $root "role" $root.Values.worker "what" "sidecars") }}{{ . | nindent 4 }}{{ end }}
  volumes:
    {{- include "settle.secretsVolume" (dict "root" $root "keys" $keys) | nindent 4 }}
    # The one writable place: a fallback for a missing prebuilt workflow bundle.
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- include "settle.temporalVolumes" $root | nindent 4 }}
    {{- with include "settle.extra" (dict "root" $root "role" $root.Values.worker "what" "extraVolumes") }}{{ . | nindent 4 }}{{ end }}
{{- end }}
