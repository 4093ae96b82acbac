#!/usr/bin/env bash
# Fetches buf/validate/validate.proto from the published protovalidate Go module
# into third_party/ (git-ignored). Nothing third-party is committed.
set -euo pipefail
PROTOVALIDATE_VERSION="${PROTOVALIDATE_VERSION:-v1.2.2}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/third_party/protovalidate/buf/validate"
if [ -f "$dest/validate.proto" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$PROTOVALIDATE_VERSION" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "fetch_protos: Go is needed to fetch validate.proto from the Go module proxy" >&2; exit 1; }
dir="$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/bufbuild/protovalidate@${PROTOVALIDATE_VERSION}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "$dest"
install -m 0644 "$dir/proto/protovalidate/buf/validate/validate.proto" "$dest/validate.proto"
echo "$PROTOVALIDATE_VERSION" > "$dest/.version"
