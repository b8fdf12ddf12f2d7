#!/usr/bin/env bash
# Builds settle's image, tagged $SETTLE_IMAGE (default settle:latest), from the Dockerfile on a machine without an image registry: the local base
# images first (tools/images/base/build.sh), then the build with --network host and this machine's CA
# bundle for npm (NODE_EXTRA_CA_CERTS, else /etc/ssl/certs/ca-certificates.crt) in tools/images/npm-ca/.
# Extra arguments go to docker build (e.g. -t settle:dev). A real deployment runs `docker build .`.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/images/base/build.sh
ca="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
trap 'rm -f tools/images/npm-ca/ca.pem' EXIT
if [ -f "$ca" ]; then cp "$ca" tools/images/npm-ca/ca.pem; fi
docker build --network host -t "${SETTLE_IMAGE:-settle:latest}" "$@" .
