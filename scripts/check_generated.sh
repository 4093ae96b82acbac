#!/usr/bin/env bash
# Fails (exit 1) when the generated code in the work tree is stale: regenerates
# the Python (scripts/gen_python.sh) and Go (scripts/gen_go.sh) stubs in a
# temporary copy of the inputs and compares the results with
#   generated/python/hapi/, generated/go/ and the tools' argument models
#   (hapi_grpc/domain/toolsets/arguments_gen.py)
# of the work tree, listing every file that differs, is missing or is extra.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$root/scripts/fetch_protos.sh"
"$root/scripts/install_go_tools.sh" protoc-gen-go protoc-gen-go-grpc >/dev/null

# The inputs of generation, nothing else. .tools is linked so the pinned
# plugins are used; the work tree's go.mod/go.sum are not copied, so a go.sum
# that is incomplete or has stale lines shows up as a difference.
mkdir -p "$tmp/generated"
cp -R "$root/scripts" "$root/protos" "$root/third_party" "$tmp/"
cp "$root/buf.yaml" "$root/buf.gen.go.yaml" "$root/pyproject.toml" "$tmp/"
[ -f "$root/buf.lock" ] && cp "$root/buf.lock" "$tmp/"
ln -s "$root/.tools" "$tmp/.tools"

log="$tmp/generate.log"
if ! { PYTHON="${PYTHON:-$root/.venv/bin/python}" BUF="${BUF:-$root/.venv/bin/buf}" \
      "$tmp/scripts/gen_python.sh" \
    && BUF="${BUF:-$root/.venv/bin/buf}" "$tmp/scripts/gen_go.sh"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "check_generated: generation failed (output above)" >&2
  exit 2
fi

status=0
compare() { # relative directory
  local rel="$1" diffs
  diffs="$(diff -rq -x __pycache__ -x '*.pyc' "$root/$rel" "$tmp/$rel" 2>&1 || true)"
  if [ -n "$diffs" ]; then
    status=1
    echo "$diffs" | sed -e "s#$tmp/#(fresh) #g" -e "s#$root/#(work tree) #g" \
      | sed 's/^/  /' >&2
  fi
}
if [ ! -d "$root/generated/python/hapi" ] || [ ! -d "$root/generated/go" ]; then
  echo "check_generated: generated/python/hapi or generated/go is missing; run scripts/gen_python.sh and scripts/gen_go.sh" >&2
  exit 1
fi
compare generated/python/hapi
compare generated/go
args=hapi_grpc/domain/toolsets/arguments_gen.py
if ! diff -q "$root/$args" "$tmp/$args" >/dev/null 2>&1; then
  status=1
  echo "  (work tree) $args differs from the one tools.proto generates" >&2
fi

if [ "$status" -ne 0 ]; then
  echo "check_generated: generated code is stale (files listed above); run scripts/gen_python.sh and scripts/gen_go.sh and commit the result" >&2
  exit 1
fi
echo "check_generated: generated/python/hapi, generated/go and $args are up to date"
