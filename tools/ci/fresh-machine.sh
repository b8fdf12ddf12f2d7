#!/usr/bin/env bash
# Proves that .ci/run passes on a machine that has never seen settle, on this one: removes what an
# earlier run left (journal/ci.md), then runs .ci/run from a fresh clone
# of this repository's HEAD, as CI does (CI=true, no standard input), with the time of each stage.
#
# Removed: the Docker engine's state (every image, container, volume and the build cache: settle's
# images, the base images and the equivalents live there), the engine and the other apt packages CI
# installs (docker.io, mmdebstrap), the Compose plugin, the Go build and module caches (the Go
# toolchain the builds fetch included), npm's and pip's caches. A run on a developer's machine loses
# all of that too, so it asks first; --yes skips the question (root only).
#
#   tools/ci/fresh-machine.sh [--yes] [--keep-go-cache] [--into DIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
yes=0 keep_go=0 into=""
while [ $# -gt 0 ]; do
  case "$1" in
    --yes) yes=1 ;;
    --keep-go-cache) keep_go=1 ;;
    --into) into="$2"; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fresh-machine: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "fresh-machine: needs root (it removes apt packages and Docker's state)" >&2; exit 2; }
if [ "$yes" != 1 ]; then
  read -r -p "Remove Docker's whole state, docker.io, mmdebstrap, the Go, npm and pip caches? [y/N] " answer
  [ "$answer" = y ] || exit 1
fi

say() { echo "== fresh-machine: $*"; }
say "stopping dockerd and containerd"
pkill -x dockerd 2>/dev/null || true
for _ in $(seq 1 30); do pgrep -x dockerd >/dev/null || break; sleep 1; done
pkill -9 -x dockerd 2>/dev/null || true
pkill -x containerd 2>/dev/null || true
say "purging the apt packages CI installs"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq docker.io mmdebstrap containerd runc >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null 2>&1 || true
say "removing Docker's state and the Compose plugin"
# A directory that is a mount point (a machine may give Docker a disk of its own at /var/lib/docker)
# cannot be removed, only emptied.
for dir in /var/lib/docker /var/lib/containerd; do
  if mountpoint -q "$dir"; then find "$dir" -mindepth 1 -maxdepth 1 -exec rm -rf {} +; else rm -rf "$dir"; fi
done
rm -rf /etc/docker "$HOME/.docker/cli-plugins/docker-compose"
if [ "$keep_go" != 1 ] && command -v go >/dev/null; then
  say "removing the Go build and module caches"
  go clean -cache -modcache >/dev/null 2>&1 || true
  rm -rf "$(go env GOCACHE)" "$(go env GOMODCACHE)"
fi
say "removing npm's and pip's caches"
npm cache clean --force >/dev/null 2>&1 || true
rm -rf "$HOME/.cache/pip" "$HOME/.npm/_cacache"

[ -n "$into" ] || into="$(mktemp -d /tmp/settle-fresh-XXXXXX)"
say "cloning $(git -C "$repo" rev-parse --short HEAD) into $into/settle"
git clone -q "$repo" "$into/settle"
cd "$into/settle"
started=$(date +%s)
say "bash .ci/run (log: $into/ci.log)"
set +e
CI=true bash .ci/run </dev/null 2>&1 | tee "$into/ci.log"
code=${PIPESTATUS[0]}
set -e
say "exit $code after $(( $(date +%s) - started )) s; stages:"
grep '^== stage' "$into/ci.log" || true
exit "$code"
