#!/usr/bin/env bash
# Installs the Go tools of the protobuf/gRPC toolchain at pinned versions into
# <repo>/.tools/bin (git-ignored). Idempotent: a tool whose binary already
# reports the pinned module version is skipped.
#
#   scripts/install_go_tools.sh            # all tools
#   scripts/install_go_tools.sh grpcurl    # only the named ones
#
# Pins are below; bump them deliberately (each one builds with Go 1.26).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TOOLS_BIN:-$root/.tools/bin}"

# name|package|module|version
TOOLS=(
  "protoc-gen-go|google.golang.org/protobuf/cmd/protoc-gen-go|google.golang.org/protobuf|v1.36.12"
  "protoc-gen-go-grpc|google.golang.org/grpc/cmd/protoc-gen-go-grpc|google.golang.org/grpc/cmd/protoc-gen-go-grpc|v1.6.2"
  "grpcurl|github.com/fullstorydev/grpcurl/cmd/grpcurl|github.com/fullstorydev/grpcurl|v1.9.4"
  "grpc_health_probe|github.com/grpc-ecosystem/grpc-health-probe|github.com/grpc-ecosystem/grpc-health-probe|v0.4.52"
  "ghz|github.com/bojand/ghz/cmd/ghz|github.com/bojand/ghz|v0.121.0"
)

command -v go >/dev/null || { echo "install_go_tools: Go is not on PATH" >&2; exit 1; }
mkdir -p "$bin"

# Prints the main module version recorded in a Go binary (or, for a binary
# built by the fallback below, in its stamp file), or nothing.
installed_version() {
  [ -x "$1" ] || return 0
  local v
  v="$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }')"
  if [ -z "$v" ] || [ "$v" = "(devel)" ]; then
    v="$(cat "$(dirname "$1")/.$(basename "$1").version" 2>/dev/null || true)"
  fi
  printf '%s' "$v"
}

# Fallback when `go install pkg@version` cannot run: it also asks the module
# proxy for the module's version list (to report deprecations), and the proxy
# may refuse that list for some modules. The pinned module is downloaded and
# its main package built with the module's own go.mod/go.sum, which is what
# `go install pkg@version` does; the version goes into a stamp file.
build_from_module() { # name pkg module version out_dir
  local name="$1" pkg="$2" module="$3" version="$4" out="$5" dir
  dir="$(cd "$(mktemp -d)" && go mod download -json "$module@$version" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  (cd "$dir" && GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
    -ldflags "-X main.versionTag=$version" -o "$out/$name" "./${pkg#"$module"}")
  echo "$version" > "$bin/.$name.version"
}

wanted=("$@")
is_wanted() {
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}
for w in "${wanted[@]}"; do
  printf '%s\n' "${TOOLS[@]}" | cut -d'|' -f1 | grep -qx -- "$w" \
    || { echo "install_go_tools: unknown tool '$w' (known: $(printf '%s\n' "${TOOLS[@]}" | cut -d'|' -f1 | tr '\n' ' '))" >&2; exit 2; }
done

for entry in "${TOOLS[@]}"; do
  IFS='|' read -r name pkg module version <<<"$entry"
  is_wanted "$name" || continue
  have="$(installed_version "$bin/$name")"
  if [ "$have" = "$version" ]; then
    echo "install_go_tools: $name $version already installed"
    continue
  fi
  echo "install_go_tools: installing $name $version${have:+ (replacing $have)}"
  # go install names the binary after the package directory; grpc-health-probe
  # is renamed to the conventional grpc_health_probe.
  tmp="$(mktemp -d)"
  rm -f "$bin/.$name.version"
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -trimpath" go install "$pkg@$version"; then
    echo "install_go_tools: go install failed; building $name from the downloaded module instead"
    build_from_module "$name" "$pkg" "$module" "$version" "$tmp"
  fi
  built="$(find "$tmp" -maxdepth 1 -type f | head -n1)"
  [ -n "$built" ] || { echo "install_go_tools: go install $pkg@$version produced no binary" >&2; exit 1; }
  mv -f "$built" "$bin/$name"
  rm -rf "$tmp"
done
