#!/bin/sh
# What the official image's entrypoint (docker/scripts/sh/entrypoint.sh at v1.32.2) does: bind on
# BIND_ON_IP (default: the container's own address); when that is a wildcard, broadcast the
# container's own address to the cluster (TEMPORAL_BROADCAST_ADDRESS); then `temporal-server start`,
# which reads TEMPORAL_SERVER_CONFIG_FILE_PATH (a template when its first line is
# `# enable-template`), TEMPORAL_SERVICES and TEMPORAL_ALLOW_NO_AUTH from the environment.
set -eu
own_address() { getent hosts "$(hostname)" | awk '{print $1; exit}'; }
: "${BIND_ON_IP:=$(own_address)}"
export BIND_ON_IP
if [ "$BIND_ON_IP" = 0.0.0.0 ] || [ "$BIND_ON_IP" = ::0 ]; then
  : "${TEMPORAL_BROADCAST_ADDRESS:=$(own_address)}"
  export TEMPORAL_BROADCAST_ADDRESS
fi
exec temporal-server start
