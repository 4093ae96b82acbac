#!/usr/bin/env bash
# Makes sure the Prometheus and Alertmanager binaries (Debian's `prometheus`,
# with promtool, and `prometheus-alertmanager`) exist for the metrics tests.
# The packages start no daemon here; the tests start and stop their own
# instances on loopback.
set -euo pipefail
need=()
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing ${need[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  exit 0
fi
echo "missing ${need[*]}: install the Debian packages (apt-get install ${need[*]})" >&2
exit 1
