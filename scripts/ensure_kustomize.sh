#!/usr/bin/env bash
# Makes sure a pinned kustomize (the renderer behind `kubectl apply -k`) is
# built from the Go module proxy, cached once per machine under
# ${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc} and linked as <repo>/.tools/kustomize,
# where tests/deploy/test_apply.py looks for it. ~1 min the first time, silent after.
set -euo pipefail
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc}"
binary="$cache/kustomize-$KUSTOMIZE_VERSION"
if [ ! -x "$binary" ]; then
  command -v go >/dev/null || { echo "ensure_kustomize: Go is needed once to build kustomize" >&2; exit 1; }
  mkdir -p "$cache"
  exec 9>"$cache/.kustomize.lock"
  flock 9
  if [ ! -x "$binary" ]; then
    echo "ensure_kustomize: building kustomize $KUSTOMIZE_VERSION (first time only, ~1 min)" >&2
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/ensure-kustomize.XXXXXX")"
    trap 'rm -rf "$scratch"' EXIT
    GOBIN="$scratch" GOFLAGS=-buildvcs=false go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
    mv -f "$scratch/kustomize" "$binary"
  fi
fi
mkdir -p "$root/.tools"
ln -sfn "$binary" "$root/.tools/kustomize"
