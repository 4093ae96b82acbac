"""A test "kubelet": serves canned container logs and stats over HTTPS to the real apiserver.

`GET /api/v1/namespaces/{ns}/pods/{pod}/log` on kube-apiserver is proxied to
`https://<node InternalIP>:<kubeletEndpoint.Port>/containerLogs/{ns}/{pod}/{container}`
(the apiserver does not verify the kubelet's certificate by default). This
server answers that path like a kubelet, honouring `tailLines`, `previous`,
`sinceSeconds`, `sinceTime`, `limitBytes` and `timestamps`; `register_node()`
points a Node at it. It runs on its own thread and event loop so sync and async
tests of any loop scope can share one instance.

    kubelet.set_log("ns", "pod", "app", ["line 1", "line 2"], previous=True)

`GET /api/v1/nodes/{node}/proxy/stats/summary` reaches `/stats/summary` here. A
kubelet serves one node, so a node whose summary is set gets a port of its own
(`port_for`): the port a request arrives on says which node's summary to answer.
The API server's node proxy refuses loopback addresses, so that port listens on
the machine's own non-loopback address (`node_address`), which the Node gives as
its InternalIP:

    register_node(api, "worker-1", kubelet.port_for("worker-1"), address=kubelet.node_address)
    kubelet.set_stats_summary("worker-1", {"node": {...}, "pods": [...]})
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes
import trustme
from aiohttp import web

from tests.fakes.kube_cluster import free_port

LogKey = tuple[str, str, str, bool]  # namespace, pod, container, previous


@dataclass
class LogRequest:
    """One request as the kubelet received it (after the apiserver translated it)."""

    namespace: str
    pod: str
    container: str
    query: dict[str, str]


def routable_address() -> str | None:
    """This machine's own non-loopback IPv4 address (the one its default route uses);
    None when it has none. Connecting a UDP socket sends nothing."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))
        address = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class FakeKubelet:
    port: int = 0
    logs: dict[LogKey, list[tuple[datetime, str]]] = field(default_factory=dict)
    requests: list[LogRequest] = field(default_factory=list)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> summary
    stats_requests: list[str] = field(default_factory=list)  # node of each summary read
    _node_ports: dict[int, str] = field(default_factory=dict)
    _context: ssl.SSLContext | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _thread: threading.Thread | None = None

    def set_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        lines: Sequence[str] | str,
        *,
        previous: bool = False,
        times: Sequence[datetime] | None = None,
    ) -> None:
        """Canned log lines; without times they are one second apart, ending now."""
        if isinstance(lines, str):
            lines = lines.splitlines()
        if times is None:
            now = datetime.now(UTC)
            times = [now - timedelta(seconds=len(lines) - 1 - i) for i in range(len(lines))]
        if len(times) != len(lines):
            raise ValueError("one time per line")
        self.logs[(namespace, pod, container, previous)] = list(zip(times, lines, strict=True))

    def set_stats_summary(self, node: str, summary: dict[str, Any]) -> None:
        """The stats summary the kubelet of `node` answers (give the node `port_for`)."""
        self.stats[node] = summary

    @property
    def node_address(self) -> str | None:
        """The address `port_for` listens on (None: no non-loopback address here)."""
        return routable_address()

    def port_for(self, node: str) -> int:
        """A port of this kubelet that serves `node` alone, on `node_address` (opened on
        first use); logs are served there too."""
        for port, served in self._node_ports.items():
            if served == node:
                return port
        address = self.node_address
        if self._loop is None or self._runner is None or address is None:
            raise RuntimeError("start the kubelet first, on a machine with a non-loopback address")
        port = free_port()
        runner, context = self._runner, self._context

        async def listen() -> None:
            await web.TCPSite(runner, address, port, ssl_context=context).start()

        asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10)
        self._node_ports[port] = node
        return port

    def requests_for(self, namespace: str, pod: str) -> list[LogRequest]:
        return [r for r in self.requests if (r.namespace, r.pod) == (namespace, pod)]

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        query = dict(request.query)
        self.requests.append(LogRequest(ns, pod, container, query))
        previous = query.get("previous", "false").lower() == "true"
        entries = self.logs.get((ns, pod, container, previous))
        if entries is None:
            if previous:
                text = f'previous terminated container "{container}" in pod "{pod}" not found'
                return web.Response(status=400, text=text)
            return web.Response(
                status=404, text=f'container "{container}" in pod "{pod}" not found'
            )
        if "sinceSeconds" in query:
            since = datetime.now(UTC) - timedelta(seconds=int(query["sinceSeconds"]))
            entries = [e for e in entries if e[0] >= since]
        elif "sinceTime" in query:
            since = _parse_time(query["sinceTime"])
            entries = [e for e in entries if e[0] >= since]
        if "tailLines" in query:
            tail = int(query["tailLines"])
            entries = entries[-tail:] if tail > 0 else []
        stamp = query.get("timestamps", "false").lower() == "true"
        body = "".join(f"{_rfc3339(t)} {line}\n" if stamp else f"{line}\n" for t, line in entries)
        data = body.encode()
        if "limitBytes" in query:
            data = data[: int(query["limitBytes"])]
        return web.Response(body=data, content_type="text/plain")

    async def _stats_summary(self, request: web.Request) -> web.Response:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        node = self._node_ports.get(sockname[1]) if sockname else None
        self.stats_requests.append(node or "")
        summary = self.stats.get(node or "")
        if summary is None:
            return web.Response(status=404, text="no stats for this node")
        return web.json_response(summary)

    def start(self) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self._context = context
        self.port = self.port or free_port()
        app = web.Application()
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._container_logs)
        app.router.add_get("/stats/summary", self._stats_summary)
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        async def serve() -> None:
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=context).start()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(serve())
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-kubelet", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("fake kubelet did not start")

    def stop(self) -> None:
        if self._loop is None or self._runner is None:
            return
        loop, runner = self._loop, self._runner
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = self._runner = None


@contextlib.contextmanager
def running_kubelet() -> Iterator[FakeKubelet]:
    kubelet = FakeKubelet()
    kubelet.start()
    try:
        yield kubelet
    finally:
        kubelet.stop()


def ready_condition(status: str = "True", **extra: Any) -> dict[str, Any]:
    now = _rfc3339(datetime.now(UTC)).split(".")[0] + "Z"
    condition = {
        "type": "Ready",
        "status": status,
        "reason": "KubeletReady" if status == "True" else "NodeStatusUnknown",
        "message": "kubelet is posting ready status"
        if status == "True"
        else "Kubelet stopped posting node status.",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    condition.update(extra)
    return condition


def register_node(
    api: kubernetes.client.ApiClient,
    name: str,
    kubelet: FakeKubelet | int,
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    allocatable: dict[str, str] | None = None,
    address: str | None = None,
) -> dict[str, Any]:
    """Creates Node `name` whose kubelet endpoint is `kubelet` (or a bare port,
    e.g. one nothing listens on, for an unreachable node) at `address` (default
    127.0.0.1); returns the Node."""
    port = kubelet if isinstance(kubelet, int) else kubelet.port
    core = kubernetes.client.CoreV1Api(api)
    capacity = allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"}
    core.create_node(
        {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"taints": taints or []},
        },
        _request_timeout=30,
    )
    status = {
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": address or "127.0.0.1"},
                {"type": "Hostname", "address": address or "127.0.0.1"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "conditions": conditions or [ready_condition()],
            "capacity": capacity,
            "allocatable": capacity,
            "nodeInfo": {
                "kubeletVersion": "v1.37.2",
                "containerRuntimeVersion": "containerd://2.1.0",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
            },
        }
    }
    node = core.patch_node_status(name, status, _request_timeout=30)
    return dict(api.sanitize_for_serialization(node))
