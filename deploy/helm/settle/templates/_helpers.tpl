{{/*
Helpers shared by the roles. Names are fixed (settle-gateway, settle-worker, ...): one settle per
namespace, as with deploy/kubernetes, so both render the same objects.
*/}}

{{- define "settle.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "settle.version" -}}
{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "settle.labels" -}}
app.kubernetes.io/name: settle
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "settle.metaLabels" -}}
app.kubernetes.io/name: settle
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: settle
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

{{/* The Secret volume of a role: only the keys it reads (dict "root" $ "keys" list). */}}
{{- define "settle.secretsVolume" -}}
- name: secrets
  secret:
    secretName: {{ .root.Values.secrets.existingSecret }}
    defaultMode: 288 # 0440: Helm reads YAML 1.2, where 0440 is the decimal 440
    items:
      {{- range .keys }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
{{- end }}

{{/* <KEY>_FILE for each key. */}}
{{- define "settle.secretFiles" -}}
{{- range .keys }}
- name: {{ . }}_FILE
  value: /etc/settle/secrets/{{ . }}
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

{{/* Temporal's frontend port, from TEMPORAL_ADDRESS (host:port). */}}
{{- define "settle.temporalPort" -}}
{{ splitList ":" .Values.config.TEMPORAL_ADDRESS | last }}
{{- end }}
