"""The servers an evaluation run investigates against.

- `Cluster`: one real etcd + kube-apiserver and one test kubelet for the whole
  run (the launchers of `tests/fakes`), loaded with each case's objects and
  logs in turn and emptied after it.
- `DataStorage`: the Data Storage REST server (`hapi_grpc.adapters.datastorage_server`)
  over a case's catalog, in process, with the case's outage injected.
- `metrics_server`/`alerts_server`: a real Prometheus on the case's series and a
  real Alertmanager holding the case's alerts, for the cases that bring them.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from evals.harness.cases import check_kinds
from evals.harness.cluster_state import ClusterLoader, LoadedState
from evals.harness.identity import catalog_hash
from evals.harness.kinds import DiscoveryError, KindIndex, kube_fetch
from hapi_grpc.cases.case import Case, DataStorageFault

PROMTOOL_TIMEOUT = 60


class FixtureError(RuntimeError):
    """A fixture could not start; the message says which and how to fix it."""


@dataclass
class Cluster:
    """The shared test cluster, its kubelet and a kubeconfig file pointing at it."""

    kube: Any  # tests.fakes.kube_cluster.KubeCluster
    kubelet: Any  # tests.fakes.kubelet.FakeKubelet
    kubeconfig: Path
    loader: ClusterLoader
    _crds: bool = False

    def check(self, cases: list[Case]) -> None:
        """Every kind of every case can be created here, or `CaseError` names it."""
        for case in cases:
            check_kinds(case, self.loader.index)

    def load(self, case: Case) -> LoadedState:
        index = self.loader.index
        needs_crds = any(
            not index.find(o.get("apiVersion"), o["kind"])
            and index.provided_for(o.get("apiVersion"), o["kind"])
            for o in case.objects
        )
        if not self._crds and needs_crds:
            # The cert-manager CRDs, installed when a case first uses their kinds.
            from tests.fakes.kube_crds import ensure_cert_manager_crds

            ensure_cert_manager_crds(self.kube.api_client())
            self.loader.refresh()
            self._crds = True
        self.kubelet.logs.clear()
        self.kubelet.stats.clear()
        for log in case.logs:
            self.kubelet.set_log(
                log.namespace, log.pod, log.container, log.text, previous=log.previous
            )
        endpoints = {}
        for node, summary in case.node_stats.items():
            if self.kubelet.node_address is None:
                raise FixtureError(
                    f"case {case.name}: node stats need a non-loopback address on this machine"
                )
            self.kubelet.set_stats_summary(node, summary)
            endpoints[node] = (self.kubelet.node_address, self.kubelet.port_for(node))
        return self.loader.load(case, endpoints)

    def unload(self, state: LoadedState) -> None:
        self.loader.unload(state)
        self.kubelet.logs.clear()
        self.kubelet.stats.clear()


_START_ATTEMPTS = 3


@contextlib.contextmanager
def running_cluster(workdir: Path) -> Iterator[Cluster]:
    """Starts the cluster and kubelet (binaries from `make kube`)."""
    try:
        from tests.fakes.kube_cluster import running_cluster as kube_cluster
        from tests.fakes.kube_crds import KINDS as CERT_MANAGER_CRDS
        from tests.fakes.kube_crds import crd
        from tests.fakes.kubelet import running_kubelet
    except ImportError as exc:  # the dev extras are not installed
        raise FixtureError(
            f"the test cluster needs the dev extras (pip install -e '.[dev]'): {exc}"
        ) from None
    for attempt in range(_START_ATTEMPTS):
        try:
            context = kube_cluster()
            kube = context.__enter__()
            break
        except BaseException as exc:
            # binaries() ends a pytest run with pytest.fail, which is a BaseException.
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            # The ports are picked free and then bound by etcd and kube-apiserver; another
            # process on the host may take one in between. New ports are picked each time.
            if "address already in use" in str(exc) and attempt + 1 < _START_ATTEMPTS:
                continue
            raise FixtureError(f"test cluster did not start: {exc}") from None
    try:
        with running_kubelet() as kubelet:
            kubeconfig = kube.write_kubeconfig(workdir / "kubeconfig")
            fetch = kube_fetch(kube.url, kube.admin_token, kube.ssl_context())
            try:
                index = KindIndex(fetch, provided=[crd(p) for p in CERT_MANAGER_CRDS])
            except DiscoveryError as exc:
                raise FixtureError(f"test cluster: {exc}") from None
            loader = ClusterLoader(kube.request, kubelet.port, index)
            yield Cluster(kube, kubelet, kubeconfig, loader)
    finally:
        context.__exit__(None, None, None)


class DataStorage:
    """The Data Storage REST server in process; the catalog and fault change per case."""

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.fault: DataStorageFault | None = None
        self.requests = 0
        self.catalog_hash = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, catalog_file: Path | None, *, strip: bool = False) -> None:
        """Serve `catalog_file` (the bundled catalog when None); with `strip`, every
        workflow without its CEL declarations, as real catalogs are: only its action type
        (and `read_only`) left."""
        from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
        from hapi_grpc.adapters.catalog.loader import load_bundled_catalog, load_catalog_file
        from hapi_grpc.adapters.datastorage_server import create_app

        workflows = (
            load_bundled_catalog() if catalog_file is None else load_catalog_file(catalog_file)
        )
        if strip:
            workflows = [
                w.model_copy(update={"preconditions": (), "invariants": ()}) for w in workflows
            ]
        self.catalog_hash = catalog_hash(workflows)  # what is served, as the report records it
        app = create_app(EmbeddedCatalog(workflows))

        @web.middleware
        async def inject(request: web.Request, handler: Any) -> web.StreamResponse:
            return await self._inject(request, handler)

        app.middlewares.append(inject)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    def reset(self, fault: DataStorageFault | None) -> None:
        """A new run: the request count starts again, with this case's fault."""
        self.fault, self.requests = fault, 0

    async def _inject(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/healthz":
            return await handler(request)
        self.requests += 1
        if self.fault is not None and _endpoint(request.path) in self.fault.endpoints:
            problem = {"type": "about:blank", "title": "Unavailable", "status": self.fault.status}
            return web.json_response(
                problem,
                status=self.fault.status,
                content_type="application/problem+json",
            )
        return await handler(request)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _endpoint(path: str) -> str:
    if path.endswith("/search"):
        return "search"
    return "schema" if path.endswith("/schema") else "workflow"


@contextlib.asynccontextmanager
async def running_datastorage(
    catalog_file: Path | None, *, strip: bool = False
) -> AsyncIterator[DataStorage]:
    server = DataStorage()
    await server.start(catalog_file, strip=strip)
    try:
        yield server
    finally:
        await server.stop()


_SAMPLE = re.compile(r"^(?P<head>[^#\s].*?)\s+(?P<value>\S+)\s+(?P<ts>[+-]?\d+(?:\.\d+)?)\s*$")


def absolute_openmetrics(text: str, now: int) -> str:
    """Relative sample timestamps (seconds from `now`, e.g. -600) made absolute."""
    out = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            stamp = now + float(match.group("ts"))
            line = f"{match.group('head')} {match.group('value')} {stamp:.0f}"
        out.append(line)
    if not out or out[-1].strip() != "# EOF":
        out.append("# EOF")
    return "\n".join(out) + "\n"


@contextlib.contextmanager
def metrics_server(case: Case, workdir: Path) -> Iterator[str]:
    """A real Prometheus serving the case's series; yields its URL."""
    from tests.fakes.prometheus_server import start_prometheus

    assert case.metrics is not None
    metrics = case.metrics
    directory = Path(tempfile.mkdtemp(prefix=f"prom-{case.name}-", dir=workdir))
    try:
        server = start_prometheus(
            directory, lambda now: absolute_openmetrics(metrics, now), PROMTOOL_TIMEOUT
        )
    except FileNotFoundError:
        raise FixtureError("prometheus/promtool missing: run `make prometheus`") from None
    except subprocess.CalledProcessError as exc:
        stderr = exc.stderr.decode()[-500:]
        raise FixtureError(f"{case.path / 'metrics.om'}: promtool: {stderr}") from None
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def alerts_server(case: Case, workdir: Path) -> Iterator[str]:
    """A real Alertmanager holding the case's alerts; yields its URL."""
    from tests.fakes.alertmanager_server import running_alertmanager

    directory = Path(tempfile.mkdtemp(prefix=f"am-{case.name}-", dir=workdir))
    try:
        with running_alertmanager(directory) as server:
            server.post_alerts(list(case.alerts))
            yield server.url
    except FileNotFoundError as exc:
        raise FixtureError(f"{exc} (`make prometheus`)") from None
