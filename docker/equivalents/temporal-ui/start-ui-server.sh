#!/bin/sh
# Renders ./config/docker.yaml from the environment as the official image's entrypoint does (its
# docker/config-template.yaml, rendered by dockerize), for the variables docs/deployment.md lists,
# with the same defaults; then runs the UI server with it as PID 1.
set -eu
q() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
  echo "temporalGrpcAddress: $(q "${TEMPORAL_ADDRESS:-127.0.0.1:7233}")"
  echo "port: ${TEMPORAL_UI_PORT:-8080}"
  echo "publicPath: $(q "${TEMPORAL_UI_PUBLIC_PATH:-}")"
  echo "enableUi: ${TEMPORAL_UI_ENABLED:-true}"
  echo "defaultNamespace: $(q "${TEMPORAL_DEFAULT_NAMESPACE:-default}")"
  echo "notifyOnNewVersion: ${TEMPORAL_NOTIFY_ON_NEW_VERSION:-true}"
  echo "refreshInterval: ${TEMPORAL_CONFIG_REFRESH_INTERVAL:-0s}"
  echo "showTemporalSystemNamespace: ${TEMPORAL_SHOW_TEMPORAL_SYSTEM_NAMESPACE:-false}"
  echo "disableWriteActions: ${TEMPORAL_DISABLE_WRITE_ACTIONS:-false}"
  echo "cors:"
  echo "  cookieInsecure: ${TEMPORAL_CSRF_COOKIE_INSECURE:-false}"
  echo "  allowOrigins:"
  origins=${TEMPORAL_CORS_ORIGINS:-http://localhost:8080}
  old_ifs=$IFS
  IFS=,
  for origin in $origins; do echo "    - $(q "$origin")"; done
  IFS=$old_ifs
  echo "tls:"
  echo "  caFile: $(q "${TEMPORAL_TLS_CA:-}")"
  echo "  certFile: $(q "${TEMPORAL_TLS_CERT:-}")"
  echo "  keyFile: $(q "${TEMPORAL_TLS_KEY:-}")"
  echo "  enableHostVerification: ${TEMPORAL_TLS_ENABLE_HOST_VERIFICATION:-false}"
  echo "  serverName: $(q "${TEMPORAL_TLS_SERVER_NAME:-}")"
  echo "auth:"
  echo "  enabled: false"
  echo "codec:"
  echo "  endpoint: $(q "${TEMPORAL_CODEC_ENDPOINT:-}")"
  echo "  passAccessToken: ${TEMPORAL_CODEC_PASS_ACCESS_TOKEN:-false}"
  echo "  includeCredentials: ${TEMPORAL_CODEC_INCLUDE_CREDENTIALS:-false}"
} > ./config/docker.yaml
exec ./ui-server --env docker start
