{{/*
Helpers shared by the roles. Names are release-aware, as in Helm's own starter chart: a release named
`settle` (or containing it) names its objects settle-gateway, settle-worker, ..., the same names as
deploy/kubernetes; any other release prefixes them with its own name, so two releases share a
namespace without colliding.
*/}}

{{- define "settle.name" -}}
{{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "settle.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* An object's name: the release's full name and a suffix (dict "root" $ "suffix" "gateway"). */}}
{{- define "settle.objectName" -}}
{{ printf "%s-%s" (include "settle.fullname" .root) .suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "settle.chart" -}}
{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The image: registry/repository, then @digest if set, else :tag (appVersion by default). */}}
{{- define "settle.image" -}}
{{- $tag := .tag | default (include "settle.version" .root) -}}
{{- $image := .root.Values.image -}}
{{- $repository := ternary (printf "%s/%s" $image.registry $image.repository) $image.repository (ne $image.registry "") -}}
{{- if and $image.digest (not .tag) -}}
{{ $repository }}@{{ $image.digest }}
{{- else -}}
{{ $repository }}:{{ $tag }}
{{- end }}
{{- end }}

{{- define "settle.version" -}}
{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The labels a role's selectors match (dict "root" $ "component" "gateway"): fixed once installed. */}}
{{- define "settle.labels" -}}
app.kubernetes.io/name: {{ include "settle.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Every object's labels: the selector's, the standard ones, and commonLabels. */}}
{{- define "settle.metaLabels" -}}
{{ include "settle.labels" . }}
app.kubernetes.io/part-of: settle
app.kubernetes.io/version: {{ .version | default (include "settle.version" .root) | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "settle.chart" .root }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* An object's metadata: name, labels and commonAnnotations (dict "root" $ "component" c "name" n). */}}
{{- define "settle.metadata" -}}
name: {{ .name }}
labels:
  {{- include "settle.metaLabels" . | nindent 2 }}
{{- with .root.Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A pod's labels and annotations beyond the role's own: podLabels and podAnnotations, the chart's and
the role's (dict "root" $ "role" .Values.gateway).
*/}}
{{- define "settle.podLabels" -}}
{{- with merge (deepCopy (.role.podLabels | default dict)) (.root.Values.podLabels | default dict) }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{- define "settle.podAnnotations" -}}
{{- with merge (deepCopy (.role.podAnnotations | default dict)) (.root.Values.podAnnotations | default dict) }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
The ServiceAccount a role's pods run as (dict "root" $ "role" <role values> "component" c): the
role's own, <fullname>-<component> unless named; with serviceAccount.create false, only a named one.
*/}}
{{- define "settle.serviceAccountName" -}}
{{- $name := (.role.serviceAccount | default dict).name | default "" -}}
{{- if .root.Values.serviceAccount.create -}}
{{ $name | default (include "settle.objectName" (dict "root" .root "suffix" .component)) }}
{{- else -}}
{{ $name }}
{{- end }}
{{- end }}

{{/*
The scheduling and extras of a pod spec (dict "root" $ "role" <role values> "component" c): its
ServiceAccount, pull secrets, node selector, tolerations, affinity, priority class, extra topology
spread. Role values win over the chart's.
*/}}
{{- define "settle.podScheduling" -}}
{{- $root := .root -}}
{{- with include "settle.serviceAccountName" . }}
serviceAccountName: {{ . }}
{{- end }}
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- with .role.nodeSelector | default $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .role.tolerations | default $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .role.affinity | default $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .role.priorityClassName | default $root.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}

{{/*
A role's topology spread: across nodes by default (ScheduleAnyway), or the role's own list, each
constraint given the role's selector labels when it names none (dict "root" $ "role" r "labels" l).
*/}}
{{- define "settle.topologySpread" -}}
{{- $labels := .labels -}}
{{- $constraints := .role.topologySpreadConstraints | default .root.Values.topologySpreadConstraints -}}
{{- if $constraints }}
topologySpreadConstraints:
{{- end }}
{{- range $constraints }}
  {{- $c := deepCopy . }}
  {{- if not (hasKey $c "labelSelector") }}
  {{- $_ := set $c "labelSelector" (dict "matchLabels" ($labels | fromYaml)) }}
  {{- end }}
  - {{ toYaml $c | indent 4 | trim }}
{{- end }}
{{- end }}

{{/* The pod's security context: the image's node user, no root, RuntimeDefault seccomp. */}}
{{- define "settle.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  runAsGroup: 1000
  fsGroup: 1000
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{- define "settle.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop: ['ALL']
{{- end }}

{{/*
The table of settle's secret keys (files/secret-keys.yaml, generated from the providers' table by
`npm run chart:secret-keys`): which roles mount each, and whether settle needs it whatever the values
(required) or only when `secrets.optional` lists it. Each key is a file of the release's Secret
(secrets.existingSecret, <fullname>-secrets by default) unless `secrets.from` names another Secret
for it; the roles read it through <KEY>_FILE.
*/}}
{{- define "settle.secretKeyTable" -}}
{{ .Files.Get "files/secret-keys.yaml" }}
{{- end }}

{{/* The secret keys a role mounts, in the table's order (dict "root" $ "role" "gateway"). */}}
{{- define "settle.roleSecretKeys" -}}
{{- $root := .root -}}
{{- $role := .role -}}
{{- $keys := list -}}
{{- $text := include "settle.secretKeyTable" $root -}}
{{- $table := $text | fromYaml -}}
{{- range $key := regexFindAll "(?m)^[A-Z0-9_]+" $text -1 }}
{{- $entry := index $table $key }}
{{- if and (has $role $entry.roles) (or $entry.required (has $key $root.Values.secrets.optional)) }}
{{- $keys = append $keys $key }}
{{- end }}
{{- end }}
{{- toJson $keys }}
{{- end }}

{{- define "settle.secretName" -}}
{{ .Values.secrets.existingSecret | default (include "settle.objectName" (dict "root" . "suffix" "secrets")) }}
{{- end }}

{{/*
The Secret volume of a role: only the keys it reads (dict "root" $ "keys" list). One Secret: a secret
volume; keys held in other Secrets (secrets.from): a projected volume of each Secret's keys.
*/}}
{{- define "settle.secretsVolume" -}}
{{- $root := .root -}}
{{- $own := list -}}
{{- $foreign := list -}}
{{- range .keys }}
{{- if hasKey $root.Values.secrets.from . }}{{ $foreign = append $foreign . }}{{ else }}{{ $own = append $own . }}{{ end }}
{{- end -}}
- name: secrets
  {{- if not $foreign }}
  secret:
    secretName: {{ include "settle.secretName" $root }}
    defaultMode: 288 # 0440: Helm reads YAML 1.2, where 0440 is the decimal 440
    items:
      {{- range $own }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
  {{- else }}
  projected:
    defaultMode: 288 # 0440
    sources:
      {{- if $own }}
      - secret:
          name: {{ include "settle.secretName" $root }}
          items:
            {{- range $own }}
            - key: {{ . }}
              path: {{ . }}
            {{- end }}
      {{- end }}
      {{- range $foreign }}
      {{- $from := index $root.Values.secrets.from . }}
      - secret:
          name: {{ $from.existingSecret }}
          items:
            - key: {{ $from.key | default . }}
              path: {{ . }}
      {{- end }}
  {{- end }}
{{- end }}

{{/* <KEY>_FILE for each key. */}}
{{- define "settle.secretFiles" -}}
{{- range .keys }}
- name: {{ . }}_FILE
  value: /etc/settle/secrets/{{ . }}
{{- end }}
{{- end }}

{{/* A role's extra env, volume mounts, volumes and sidecars (dict "role" r "root" $ "what" "extraEnv"). */}}
{{- define "settle.extra" -}}
{{- with concat (get .root.Values .what | default list) (get .role .what | default list) }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* The init container of the gateway and the workers: the migrations only, DATABASE_URL alone. */}}
{{- define "settle.migrateInit" -}}
- name: migrate
  image: {{ .image }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  args: ['migrate']
  env:
    - name: DATABASE_URL_FILE
      value: /etc/settle/secrets/DATABASE_URL
  volumeMounts:
    - name: secrets
      mountPath: /etc/settle/secrets
      readOnly: true
  resources:
    {{- toYaml .root.Values.migrate.resources | nindent 4 }}
  {{- include "settle.containerSecurityContext" . | nindent 2 }}
{{- end }}

{{/*
Temporal's credential for a role that talks to Temporal (gateway, workers, the migration Job): the
mTLS client certificate or the API key, as files of an existing Secret. The codec server never
includes these.
*/}}
{{- define "settle.temporalEnv" -}}
{{- if eq .Values.temporal.auth "mtls" }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/settle/temporal-tls/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/settle/temporal-tls/tls.key
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/settle/temporal-tls/ca.crt
{{- else if eq .Values.temporal.auth "apiKey" }}
- name: TEMPORAL_API_KEY_FILE
  value: /etc/settle/temporal-cloud/{{ .Values.temporal.apiKey.key }}
{{- end }}
{{- end }}

{{- define "settle.temporalMounts" -}}
{{- if eq .Values.temporal.auth "mtls" }}
- name: temporal-tls
  mountPath: /etc/settle/temporal-tls
  readOnly: true
{{- else if eq .Values.temporal.auth "apiKey" }}
- name: temporal-cloud
  mountPath: /etc/settle/temporal-cloud
  readOnly: true
{{- end }}
{{- end }}

{{- define "settle.temporalVolumes" -}}
{{- if eq .Values.temporal.auth "mtls" }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.mtls.existingSecret }}
    defaultMode: 288 # 0440: Helm reads YAML 1.2, where 0440 is the decimal 440
{{- else if eq .Values.temporal.auth "apiKey" }}
- name: temporal-cloud
  secret:
    secretName: {{ .Values.temporal.apiKey.existingSecret }}
    defaultMode: 288 # 0440: Helm reads YAML 1.2, where 0440 is the decimal 440
    items:
      - key: {{ .Values.temporal.apiKey.key }}
        path: {{ .Values.temporal.apiKey.key }}
{{- end }}
{{- end }}

{{/* PayPal's certificate as a mounted file (SETTLE_PAYPAL_CERT_PATH) for the gateway, when given. */}}
{{- define "settle.paypalCertificate" -}}
{{- $cert := .Values.providers.paypal.certificate -}}
{{- if or $cert.existingSecret $cert.existingConfigMap }}true{{ end }}
{{- end }}

{{/* Temporal's frontend port, from TEMPORAL_ADDRESS (host:port). */}}
{{- define "settle.temporalPort" -}}
{{ splitList ":" .Values.config.TEMPORAL_ADDRESS | last }}
{{- end }}

{{/* KEDA's ScaledObject for the workers: wanted, and its CRD served by the cluster. */}}
{{- define "settle.keda" -}}
{{- if and .Values.worker.keda.enabled (.Capabilities.APIVersions.Has "keda.sh/v1alpha1/ScaledObject") }}true{{ end }}
{{- end }}
