#!/usr/bin/env bash
# Builds the two local base images the Dockerfile takes as build arguments,
# from Debian's packages with mmdebstrap, into buildah's local storage:
#
#   localhost/hapi-base-python:<key>   stands in for python:3.11-slim
#   localhost/hapi-base-go:<key>       stands in for golang (fetch step only)
#
#   scripts/image_bases.sh            # build what is missing, print the build args
#
# Prints `PYTHON_IMAGE=...` and `GO_IMAGE=...` lines on stdout. <key> is a hash
# of each recipe (suite, package list, customisation), so an image is built
# once per machine and again only when its recipe changes (~2-4 min each the
# first time, instant afterwards). Two runs at once are safe (a lock).
#
# What the official images provide and a Debian root filesystem lacks is
# supplied here, so the Dockerfile's contract stays the same for docker users:
# - `python` on PATH (python-is-python3), pip (python3-pip);
# - pip installing into the system interpreter: Debian marks it externally
#   managed (PEP 668), the official image does not; the marker is removed;
# - the Go toolchain on PATH with GOPATH=/go (Debian's golang-go: the fetch
#   only runs `go mod download`, which any Go >= 1.16 does);
# - the image config the official images set: PATH, LANG, a default command.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc}"
suite="${IMAGE_DEBIAN_SUITE:-bookworm}"
mirror="${IMAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
buildah=(buildah --storage-driver vfs)

log() { echo "image_bases: $*" >&2; }
die() { log "$*"; exit 1; }

"$root/scripts/ensure_image_tools.sh"

# Recipes: packages, then customize hooks run on the finished root filesystem
# ("$1" is its path), then image config as `buildah config` arguments.
python_packages="python3 python3-pip python-is-python3 ca-certificates"
python_hooks=(
  'rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED'
)
python_config=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --env LANG=C.UTF-8 --cmd python3)

go_packages="golang-go ca-certificates"
go_hooks=(
  'mkdir -p "$1"/go && chmod 0777 "$1"/go'
)
go_config=(--env PATH=/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --env GOPATH=/go --env LANG=C.UTF-8 --workingdir /go --cmd bash)

# Shared by both: no docs, man pages or translations; no apt lists left behind.
common_dpkg=(
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
)
common_hooks=(
  'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/* "$1"/tmp/*'
)

# build NAME PACKAGES HOOKS_ARRAY CONFIG_ARRAY -> prints the image reference.
build() {
  local name="$1" packages="$2"
  local -n hooks="$3" config="$4"
  local key ref
  key="$(printf '%s\n' "$suite" "$mirror" "$packages" "${hooks[@]}" "${config[@]}" \
    "${common_dpkg[@]}" "${common_hooks[@]}" | sha256sum | cut -c1-16)"
  ref="localhost/hapi-base-$name:$key"
  if "${buildah[@]}" inspect --type image "$ref" >/dev/null 2>&1; then
    printf '%s' "$ref"
    return 0
  fi
  mkdir -p "$cache"
  exec 8>"$cache/.image-bases.lock"
  flock 8
  if ! "${buildah[@]}" inspect --type image "$ref" >/dev/null 2>&1; then
    local scratch hook_args=() h ctr
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/image-bases.XXXXXX")"
    for h in "${hooks[@]}" "${common_hooks[@]}"; do hook_args+=(--customize-hook="$h"); done
    log "building $ref from Debian $suite: $packages (first time only)"
    mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' \
      "${common_dpkg[@]}" --include="${packages// /,}" "${hook_args[@]}" \
      "$suite" "$scratch/rootfs.tar" "$mirror" >&2 \
      || { rm -rf "$scratch"; die "mmdebstrap failed for $name"; }
    ctr="$("${buildah[@]}" from scratch)"
    "${buildah[@]}" add "$ctr" "$scratch/rootfs.tar" / >/dev/null
    "${buildah[@]}" config "${config[@]}" --label "org.hapi-grpc.base-recipe=$key" "$ctr"
    "${buildah[@]}" commit --quiet --rm "$ctr" "$ref" >/dev/null
    rm -rf "$scratch"
    log "built $ref"
  fi
  flock -u 8
  printf '%s' "$ref"
}

python_ref="$(build python "$python_packages" python_hooks python_config)"
go_ref="$(build go "$go_packages" go_hooks go_config)"
echo "PYTHON_IMAGE=$python_ref"
echo "GO_IMAGE=$go_ref"
