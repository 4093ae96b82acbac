"""A real Alertmanager (Debian `prometheus-alertmanager`) on loopback, fed through its API."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.local_process import free_port, start_logged, stop_process, wait_ready

CONFIG = """\
route:
  receiver: blackhole
  group_wait: 1h
receivers:
  - name: blackhole
"""


@dataclass
class AlertmanagerServer:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _post(self, path: str, payload: Any) -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def post_alerts(self, alerts: list[Mapping[str, Any]]) -> None:
        """POST /api/v2/alerts: `alerts` are {labels, annotations?, startsAt?, endsAt?}."""
        self._post("/api/v2/alerts", alerts)

    def silence(self, matchers: Mapping[str, str]) -> str:
        """Create a one-hour silence for equality `matchers`; returns its id."""
        now = datetime.now(UTC)
        body = self._post(
            "/api/v2/silences",
            {
                "matchers": [
                    {"name": k, "value": v, "isRegex": False, "isEqual": True}
                    for k, v in matchers.items()
                ],
                "startsAt": now.isoformat(),
                "endsAt": (now + timedelta(hours=1)).isoformat(),
                "createdBy": "tests",
                "comment": "test silence",
            },
        )
        return str(body["silenceID"])

    def stop(self) -> None:
        stop_process(self.process)


@contextlib.contextmanager
def running_alertmanager(workdir: Path) -> Iterator[AlertmanagerServer]:
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if binary is None:
        raise FileNotFoundError("alertmanager missing: run scripts/ensure_prometheus.sh")
    config = workdir / "alertmanager.yml"
    config.write_text(CONFIG)
    port = free_port()
    log = workdir / "alertmanager.log"
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.path={workdir / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        # An empty address turns clustering off (no gossip port on 9094).
        "--cluster.listen-address=",
    ]
    process = start_logged(argv, log)
    server = AlertmanagerServer(port, process, log)
    try:
        wait_ready(f"{server.url}/-/ready", process, log)
        yield server
    finally:
        server.stop()
