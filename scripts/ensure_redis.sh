#!/usr/bin/env bash
# Makes sure a redis-server binary exists for the shared-cache tests
# (Debian's redis-server). The tests start and stop their own instance.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing redis-server (Debian package)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  exit 0
fi
echo "redis-server is missing: install Debian's redis-server package (apt-get install redis-server)" >&2
exit 1
