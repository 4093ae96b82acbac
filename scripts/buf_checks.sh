#!/usr/bin/env bash
# Contract checks: buf lint, buf format (no diff allowed) and buf breaking of
# the protos module against a reference contract:
#   - $BUF_BREAKING_AGAINST (any git ref) when set, else
#   - the latest v* tag when one exists, else
#   - HEAD~1 when it holds protos/;
#   otherwise the breaking check is skipped with a note.
#
# The reference is not given to buf as a git input: that would lack the
# git-ignored third_party/ module the contract imports. It is exported with
# git archive into a temporary directory, third_party/ is copied next to it,
# it is built there into an image and `buf breaking --against <image>` runs.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
buf="${BUF:-$root/.venv/bin/buf}"
cd "$root"
"$root/scripts/fetch_protos.sh"

echo "buf_checks: buf lint"
"$buf" lint

echo "buf_checks: buf format --diff --exit-code protos"
"$buf" format protos --diff --exit-code

ref="${BUF_BREAKING_AGAINST:-}"
if [ -z "$ref" ] && git rev-parse --git-dir >/dev/null 2>&1; then
  ref="$(git tag --list 'v*' --sort=-version:refname | head -n1)"
  if [ -z "$ref" ] && git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null; then
    if [ -n "$(git ls-tree --name-only 'HEAD~1' protos)" ]; then
      ref="HEAD~1"
    fi
  fi
fi
if [ -z "$ref" ]; then
  echo "buf_checks: note: breaking check skipped (no v* tag, and HEAD~1 is missing or has no protos/)"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ref"
files=(protos)
if git cat-file -e "$ref:buf.yaml" 2>/dev/null; then files+=(buf.yaml); fi
git archive "$ref" "${files[@]}" | tar -x -C "$tmp/ref"
[ -f "$tmp/ref/buf.yaml" ] || cp buf.yaml "$tmp/ref/buf.yaml"
cp -R third_party "$tmp/ref/third_party"
(cd "$tmp/ref" && "$buf" build -o "$tmp/against.binpb")

echo "buf_checks: buf breaking protos against $ref ($(git rev-parse --short "$ref^{commit}"))"
"$buf" breaking protos --against "$tmp/against.binpb"
echo "buf_checks: ok"
