"""A real Prometheus on loopback serving deterministic, backfilled series.

The data is written as OpenMetrics text with explicit timestamps, turned into
TSDB blocks by `promtool tsdb create-blocks-from openmetrics`, and served by
`prometheus` (Debian package, installed by scripts/ensure_prometheus.sh).
Samples end at `NOW`, the start of the test session, so both instant queries
(at `NOW`) and range queries see them.

The story the series tell (namespace `payments`):
- `container_memory_working_set_bytes` of pod payment-api-1 climbs linearly
  to exactly its limit (`MEMORY_LIMIT`) at the last sample, as before an OOM
  kill; payment-api-2 stays flat at 250 MiB; one more pod lives in `checkout`.
- `http_requests_total` for payment-api: code 200 at 100/s all along, code
  500 at 0 until `NOW - 20m`, then 5/s (a 5xx rate that starts mid-window).
- `up{job="node-exporter"}`: node-1 reports until `NOW`; node-2 stopped
  reporting at `NOW - 20m`.
Plus a recording reverse proxy (aiohttp) that stands in front of it, demands
a bearer token and records the headers it saw.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

from tests.fakes.local_process import free_port, start_logged, stop_process, wait_ready

__all__ = ["free_port", "wait_ready"]

STEP = 30  # seconds between samples
WINDOW = 3600  # seconds of history
MEMORY_LIMIT = 536_870_912  # 512 MiB
MEMORY_START = 209_715_200  # 200 MiB
FLAT_MEMORY = 262_144_000  # 250 MiB
ERRORS_START_AGO = 1200  # the 5xx start, and node-2 stops, 20 minutes before NOW
ERROR_RATE = 5.0
OK_RATE = 100.0


def openmetrics(now: int) -> str:
    """The whole data set as OpenMetrics text, one sample per line, ending with # EOF."""
    times = list(range(now - WINDOW, now + 1, STEP))
    lines: list[str] = ["# TYPE container_memory_working_set_bytes gauge"]
    mem = 'container_memory_working_set_bytes{{namespace="{ns}",pod="{pod}",container="api"}}'
    for t in times:
        share = (t - times[0]) / (times[-1] - times[0])
        value = MEMORY_START + round((MEMORY_LIMIT - MEMORY_START) * share)
        lines.append(f"{mem.format(ns='payments', pod='payment-api-1')} {value} {t}")
    for t in times:
        lines.append(f"{mem.format(ns='payments', pod='payment-api-2')} {FLAT_MEMORY} {t}")
    for t in times:
        lines.append(f"{mem.format(ns='checkout', pod='cart-1')} 104857600 {t}")
    lines.append("# TYPE kube_pod_container_resource_limits gauge")
    for t in times:
        lines.append(
            'kube_pod_container_resource_limits{namespace="payments",pod="payment-api-1",'
            f'container="api",resource="memory"}} {MEMORY_LIMIT} {t}'
        )
    lines.append("# TYPE http_requests counter")
    req = 'http_requests_total{{namespace="payments",service="payment-api",code="{code}"}}'
    for t in times:
        lines.append(f"{req.format(code='200')} {OK_RATE * (t - times[0]):.0f} {t}")
    errors_from = now - ERRORS_START_AGO
    for t in times:
        count = ERROR_RATE * max(0, t - errors_from)
        lines.append(f"{req.format(code='500')} {count:.0f} {t}")
    lines.append("# TYPE up gauge")
    for t in times:
        lines.append(f'up{{job="node-exporter",instance="node-1:9100"}} 1 {t}')
    for t in times:
        if t <= now - ERRORS_START_AGO:
            lines.append(f'up{{job="node-exporter",instance="node-2:9100"}} 1 {t}')
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@dataclass
class PrometheusServer:
    port: int
    now: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.process)


def start_prometheus(
    workdir: Path, series: Callable[[int], str] = openmetrics, promtool_timeout: float = 60
) -> PrometheusServer:
    """Backfill `series(now)` (OpenMetrics text) into `workdir` and start Prometheus on it.

    A failed backfill raises `subprocess.CalledProcessError` (promtool's stderr on it)."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        raise FileNotFoundError("prometheus/promtool missing: run scripts/ensure_prometheus.sh")
    now = int(time.time())
    data = workdir / "data.om"
    data.write_text(series(now))
    tsdb = workdir / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)],
        check=True,
        capture_output=True,
        timeout=promtool_timeout,
    )
    port = free_port()
    log = workdir / "prometheus.log"
    argv = [
        prometheus,
        "--config.file=/dev/null",
        f"--storage.tsdb.path={tsdb}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=30d",
        "--query.lookback-delta=5m",
    ]
    server = PrometheusServer(port, now, start_logged(argv, log), log)
    try:
        wait_ready(f"{server.url}/-/ready", server.process, log)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running_prometheus(workdir: Path) -> Iterator[PrometheusServer]:
    server = start_prometheus(workdir)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class RecordingProxy:
    """Forwards GETs to `upstream`, demanding `Authorization: Bearer <token>` when set."""

    upstream: str
    token: str | None = None
    seen: list[dict[str, str]] = field(default_factory=list)
    delay: float = 0.0
    url: str = ""
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    async def start(self) -> RecordingProxy:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._session = aiohttp.ClientSession()
        return self

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        import asyncio

        self.seen.append({**request.headers, "path": request.path_qs})
        if self.delay:
            await asyncio.sleep(self.delay)
        if (
            self.token is not None
            and request.headers.get("Authorization") != f"Bearer {self.token}"
        ):
            return web.json_response({"status": "error", "error": "unauthorized"}, status=401)
        assert self._session is not None
        path = request.match_info["tail"]
        async with self._session.get(
            f"{self.upstream}/{path}", params=list(request.query.items())
        ) as resp:
            body = await resp.read()
            return web.Response(body=body, status=resp.status, content_type=resp.content_type)
