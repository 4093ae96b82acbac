#!/usr/bin/env bash
# Builds the project's Dockerfile with buildah (no daemon) on the local base
# images of scripts/image_bases.sh, tagged localhost/hapi-grpc:<version>.
#
#   scripts/build_image.sh [CONTEXT_DIR]   # `make image`; CONTEXT_DIR defaults to the repo
#
# Environment:
#   IMAGE_TAG       the tag (default: localhost/hapi-grpc:<pyproject version>)
#   IMAGE_BUILD_CA  CA bundle the build steps trust while they fetch packages
#                   (default: this machine's /etc/ssl/certs/ca-certificates.crt,
#                   so a build behind a TLS-inspecting proxy works); mounted for
#                   RUN steps only, never stored in the image. "none" to skip.
#
# The Dockerfile is built as written: only its base-image build arguments
# change, so the same file builds with docker and the official images.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
context="$(cd "${1:-$root}" && pwd)"
version="$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$context/pyproject.toml")"
tag="${IMAGE_TAG:-localhost/hapi-grpc:$version}"
ca="${IMAGE_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}"

build_args=()
while IFS= read -r line; do
  build_args+=(--build-arg "$line")
done < <("$root/scripts/image_bases.sh")

volumes=()
if [ "$ca" != none ] && [ -f "$ca" ]; then
  volumes+=(--volume "$ca:/etc/ssl/certs/ca-certificates.crt:ro")
fi

# What the build reads: the Dockerfile, .dockerignore, the base images and the
# files an allow-list .dockerignore ("*", then "!path" lines) lets through.
# The hash recorded for the tagged image's id means nothing changed: skip the
# build (even a fully cached buildah build takes minutes on vfs storage).
inputs_hash() {
  local ignore="$context/.dockerignore" paths=()
  [ -f "$ignore" ] && [ "$(grep -v -e '^#' -e '^$' "$ignore" | head -n1)" = "*" ] || return 1
  while IFS= read -r line; do
    case "$line" in '!'*) paths+=("${line#!}") ;; '*' | '**/__pycache__' | '**/*.pyc' | '#'* | '') ;; *) return 1 ;; esac
  done <"$ignore"
  {
    printf '%s\n' "${build_args[@]}"
    (cd "$context" && find Dockerfile .dockerignore "${paths[@]}" -type f \
      ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-32
}
image_id() { buildah --storage-driver vfs inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null; }
inputs="$(inputs_hash || true)"
record="${HAPI_TOOLS_CACHE:-$HOME/.cache/hapi-grpc}/image-inputs/$(printf '%s' "$tag" | tr '/:' '__')"
if [ -n "$inputs" ] && [ -f "$record" ] && [ "$(cat "$record")" = "$(image_id) $inputs" ]; then
  echo "build_image: $tag is up to date" >&2
  echo "$tag"
  exit 0
fi
rm -f "$record"

echo "build_image: building $tag from $context" >&2
start=$(date +%s)
# No --layers: buildah 1.28 would reuse the runtime stage's cached
# `RUN --mount=type=bind,from=build` install after the wheels changed, and ship
# the old code. Every build is a full one (~10 min); unchanged inputs skip it.
buildah --storage-driver vfs bud --isolation chroot --pull=never \
  "${build_args[@]}" "${volumes[@]}" \
  --file "$context/Dockerfile" --tag "$tag" "$context" >&2
if [ -n "$inputs" ]; then
  mkdir -p "$(dirname "$record")"
  echo "$(image_id) $inputs" >"$record"
fi
echo "build_image: built $tag in $(( $(date +%s) - start )) s" >&2
echo "$tag"
