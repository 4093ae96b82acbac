#!/usr/bin/env bash
# Makes sure the test cluster binaries exist: a pinned kube-apiserver built from
# the Go module proxy and Debian's etcd server, both cached once per machine
# under ${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc} and linked from
# <repo>/.tools/kube/ (git-ignored), where the test fixtures look for them.
#
#   scripts/ensure_kube_apiserver.sh          # build/fetch what is missing
#   scripts/ensure_kube_apiserver.sh --print  # also print the two paths
#
# Silent when everything is cached. Two runs at once are safe: the second waits
# on a lock and then finds the binaries. The first build of kube-apiserver takes
# ~17 min on 2 cores (~2.5 GB RSS, ~3 GB of Go build cache); a relink ~15 s.
#
# Why a generated module: k8s.io/kubernetes replaces every k8s.io staging module
# with a ./staging path, so `go install k8s.io/kubernetes/cmd/kube-apiserver@v…`
# cannot work. A throw-away module requiring k8s.io/kubernetes and replacing each
# staging module with its published tag (v0.X.Y) builds the same code.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc}"
links="$root/.tools/kube"
apiserver="$cache/kube-apiserver-$KUBE_VERSION"
print=0
[ "${1:-}" = "--print" ] && print=1

log() { echo "ensure_kube_apiserver: $*" >&2; }
die() { log "$*"; exit 1; }

find_etcd() { # newest cached etcd binary, or nothing
  local found
  found="$(ls -d "$cache"/etcd-*/usr/bin/etcd 2>/dev/null | sort -V | tail -n1 || true)"
  [ -n "$found" ] && [ -x "$found" ] && printf '%s' "$found"
  return 0
}

link_all() {
  mkdir -p "$links"
  ln -sfn "$apiserver" "$links/kube-apiserver"
  ln -sfn "$1" "$links/etcd"
  if [ "$print" = 1 ]; then
    echo "KUBE_APISERVER=$links/kube-apiserver"
    echo "ETCD=$links/etcd"
  fi
}

# Fast path without the lock: both present → link (cheap, idempotent) and leave.
etcd_bin="$(find_etcd)"
if [ -x "$apiserver" ] && [ -n "$etcd_bin" ]; then
  link_all "$etcd_bin"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.kube.lock"
if ! flock -n 9; then
  log "another build holds $cache/.kube.lock; waiting for it"
  flock 9
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/ensure-kube.XXXXXX")"
trap 'rm -rf "$scratch"; rm -f "$apiserver.tmp.$$"' EXIT

build_apiserver() {
  command -v go >/dev/null || die "Go is not on PATH (needed once to build kube-apiserver)"
  local work minor staging_version upstream
  work="$scratch/build"
  mkdir -p "$work"
  minor="$(echo "$KUBE_VERSION" | cut -d. -f2)"
  staging_version="v0.${KUBE_VERSION#v1.}"
  log "building kube-apiserver $KUBE_VERSION into $apiserver (first time only; ~17 min on 2 cores)"
  upstream="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
  [ -f "$upstream" ] || die "could not download k8s.io/kubernetes@$KUBE_VERSION"
  # go.mod of the throw-away module: upstream's go and godebug lines, one
  # replace per published staging module (k8s.io/sample-* are not published).
  python3 - "$upstream" "$KUBE_VERSION" "$staging_version" >"$work/go.mod" <<'PY'
import re
import sys

path, version, staging = sys.argv[1:4]
text = open(path, encoding="utf-8").read()
out = ["module hapi-grpc.test/kube-apiserver-build", ""]
go = re.search(r"^go\s+(\S+)", text, re.M)
if go:
    out.append(f"go {go.group(1)}")
block = re.search(r"^godebug\s*\((.*?)^\)", text, re.M | re.S)
if block:
    out.append("godebug (" + block.group(1) + ")")
out += re.findall(r"^godebug\s+[^(\s].*$", text, re.M)
out += ["", f"require k8s.io/kubernetes {version}", "", "tool k8s.io/kubernetes/cmd/kube-apiserver", ""]
mods = sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", text, re.M)))
mods = [m for m in mods if not m.startswith("k8s.io/sample-")]
if not mods:
    sys.exit("no staging replacements found in upstream go.mod")
out.append("replace (")
out += [f"\t{m} => {m} {staging}" for m in mods]
out.append(")")
print("\n".join(out))
PY
  (cd "$work" && go mod tidy >/dev/null 2>"$work/tidy.log") \
    || { cat "$work/tidy.log" >&2; die "go mod tidy failed"; }
  local pkg=k8s.io/component-base/version
  (cd "$work" && go build -trimpath -o "$apiserver.tmp.$$" -ldflags "-s -w \
      -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
      -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z" \
      k8s.io/kubernetes/cmd/kube-apiserver) || { rm -f "$apiserver.tmp.$$"; die "go build failed"; }
  mv -f "$apiserver.tmp.$$" "$apiserver"
  log "built $("$apiserver" --version)"
}

fetch_etcd() {
  command -v apt-get >/dev/null && command -v dpkg >/dev/null \
    || die "etcd is missing and this is not a Debian-like machine: put an etcd 3.4+ binary at $links/etcd"
  local work deb version
  work="$scratch/etcd"
  mkdir -p "$work"
  log "fetching Debian's etcd-server package into $cache (unpacked, no service started)"
  if ! (cd "$work" && apt-get download -qq etcd-server >/dev/null 2>&1); then
    [ "$(id -u)" = 0 ] || die "apt-get download etcd-server failed; run 'apt-get update' as root and retry"
    apt-get update -qq >/dev/null
    (cd "$work" && apt-get download -qq etcd-server >/dev/null) || die "apt-get download etcd-server failed"
  fi
  deb="$(ls "$work"/etcd-server_*.deb | head -n1)"
  version="$(dpkg-deb -f "$deb" Version | tr ':+~' '___')"
  rm -rf "$cache/etcd-$version.tmp"
  dpkg -x "$deb" "$cache/etcd-$version.tmp"
  rm -rf "$cache/etcd-$version"
  mv "$cache/etcd-$version.tmp" "$cache/etcd-$version"
  [ -x "$cache/etcd-$version/usr/bin/etcd" ] || die "etcd-server package has no usr/bin/etcd"
}

etcd_bin="$(find_etcd)"
if [ -z "$etcd_bin" ]; then
  fetch_etcd
  etcd_bin="$(find_etcd)"
fi
[ -x "$apiserver" ] || build_apiserver
link_all "$etcd_bin"
