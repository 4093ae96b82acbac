#!/usr/bin/env bash
# Makes sure buildah and mmdebstrap (Debian packages) are installed: the image
# is built without a daemon and from local base images (scripts/build_image.sh).
# Silent when both are present; installs them with apt otherwise (needs root).
set -euo pipefail
missing=()
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ "${#missing[@]}" = 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure_image_tools: install ${missing[*]} (Debian packages) and retry" >&2
  exit 1
fi
echo "ensure_image_tools: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
