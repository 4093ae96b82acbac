"""Runs cases against the real server: fixtures up, `hapi-grpc serve` pointed at
them, every case K times over gRPC, each result scored.

Cases that share a catalog and bring no outage, series or alerts share one
server process; the others get their own, so a catalog cache, a tripped
circuit breaker or a Prometheus URL never leaks from one case into another.
One cluster serves the whole run: each case's objects are loaded before its
runs and deleted after them.
"""

from __future__ import annotations

import contextlib
import copy
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from evals.harness.fixtures import (
    Cluster,
    FixtureError,
    alerts_server,
    metrics_server,
    running_cluster,
    running_datastorage,
)
from evals.harness.scoring import RunScore, score_run
from hapi_grpc.cases.case import Case

# Settings of the user's environment the evaluated server inherits: the model
# and the investigation bounds. Everything else (ports, catalog, cluster,
# metrics, auth, TLS) is the runner's.
INHERITED_PREFIXES = (
    "HAPI_LLM_",
    "HAPI_MAX_",
    "HAPI_DEFAULT_BUDGET_SECONDS",
    "HAPI_MIN_CONFIDENCE",
    "HAPI_TOOL_TIMEOUT_SECONDS",
    "HAPI_ANSWER_MARGIN_SECONDS",
    "HAPI_KUBERNETES_MAX_CALLS",
    "HAPI_KUBERNETES_CALL_TIMEOUT",
    "HAPI_CAPTURE_",  # the evaluated runs captured as cases of their own
)
SERVER_START_TIMEOUT = 90.0

Progress = Callable[[Case, int, RunScore], None]


@dataclass
class RunOptions:
    repeat: int = 1
    timeout: float = 360.0  # per AnalyzeIncident call
    cluster: bool = True
    strip_declarations: bool = False  # serve the catalogs without their CEL declarations
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def model_name(environ: dict[str, str]) -> str:
    provider = environ.get("HAPI_LLM_PROVIDER", "builtin") or "builtin"
    if provider == "builtin":
        return "builtin"
    return f"{provider}:{environ.get('HAPI_LLM_MODEL', '?')}"


def _group_key(case: Case) -> tuple[Any, ...]:
    alone = bool(case.meta.datastorage_fault or case.metrics or case.alerts or case.history)
    return (str(case.catalog_file or ""), case.name if alone else "")


def server_groups(cases: Sequence[Case]) -> list[list[Case]]:
    """Cases in the order given, grouped by the server process they can share."""
    groups: dict[tuple[Any, ...], list[Case]] = {}
    for case in cases:
        groups.setdefault(_group_key(case), []).append(case)
    return list(groups.values())


def run_request(case: Case, repeat: int) -> Any:
    """The case's request with a remediation id of its own per run (no reuse)."""
    from hapi.v1 import service_pb2

    body = copy.deepcopy(case.request)
    incident = body["incident"]
    base = incident.get("remediationId") or incident.get("remediation_id") or case.name
    incident.pop("remediation_id", None)
    incident["remediationId"] = f"{base}-eval-{repeat}-{time.time_ns() % 10**9}"
    return json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest())


async def run_cases(
    cases: Sequence[Case], options: RunOptions, progress: Progress | None = None
) -> list[RunScore]:
    """Every case `options.repeat` times; scores in case order."""
    scores: list[RunScore] = []
    with tempfile.TemporaryDirectory(prefix="hapi-eval-") as tmp:
        workdir = Path(tmp)
        with _maybe_cluster(options.cluster, workdir) as cluster:
            if cluster:
                cluster.check(list(cases))  # before any case runs
            for group in server_groups(cases):
                scores += await _run_group(group, cluster, workdir, options, progress)
    return scores


@contextlib.contextmanager
def _maybe_cluster(enabled: bool, workdir: Path) -> Iterator[Cluster | None]:
    if not enabled:
        yield None
        return
    with running_cluster(workdir) as cluster:
        yield cluster


def _server_settings(
    options: RunOptions, cluster: Cluster | None, datastorage_url: str, extra: dict[str, str]
) -> dict[str, str]:
    settings = {k: v for k, v in options.environ.items() if k.startswith(INHERITED_PREFIXES)}
    settings.update(
        {
            "HAPI_DATA_STORAGE_URL": datastorage_url,
            "HAPI_RESULT_TTL_SECONDS": "0",
            "HAPI_LOG_LEVEL": "WARNING",
            "HAPI_KUBERNETES": "on" if cluster else "off",
            # The fake Data Storage serves no history: the server's own records.
            "HAPI_HISTORY_DATA_STORAGE": "false",
            # An empty value: nothing from the caller's shell points elsewhere.
            "KUBECONFIG": str(cluster.kubeconfig) if cluster else "",
            **extra,
        }
    )
    return settings


async def _run_group(
    group: list[Case],
    cluster: Cluster | None,
    workdir: Path,
    options: RunOptions,
    progress: Progress | None,
) -> list[RunScore]:
    from tests.fakes.serve_process import ServeProcess

    first = group[0]
    extra: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if first.metrics:
            extra["HAPI_PROMETHEUS_URL"] = stack.enter_context(metrics_server(first, workdir))
        if first.alerts:
            extra["HAPI_ALERTMANAGER_URL"] = stack.enter_context(alerts_server(first, workdir))
        async with running_datastorage(
            first.catalog_file, strip=options.strip_declarations
        ) as datastorage:
            server = ServeProcess(**_server_settings(options, cluster, datastorage.url, extra))
            try:
                await server.start(timeout=SERVER_START_TIMEOUT)
            except RuntimeError as exc:
                await server.close()
                raise FixtureError(f"hapi-grpc serve did not start: {exc}") from None
            try:
                async with grpc.aio.insecure_channel(server.address) as channel:
                    return await _run_cases_on(
                        channel, group, cluster, datastorage, options, progress
                    )
            finally:
                await server.close()


async def _run_cases_on(
    channel: grpc.aio.Channel,
    group: list[Case],
    cluster: Cluster | None,
    datastorage: Any,
    options: RunOptions,
    progress: Progress | None,
) -> list[RunScore]:
    from hapi.v1 import service_pb2_grpc

    stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
    scores = []
    for case in group:
        state = cluster.load(case) if cluster else None
        try:
            for repeat in range(options.repeat):
                datastorage.reset(case.meta.datastorage_fault)
                score = await _one_run(stub, case, repeat, options.timeout)
                score.catalog_hash = datastorage.catalog_hash
                scores.append(score)
                if progress:
                    progress(case, repeat, score)
        finally:
            if cluster and state:
                cluster.unload(state)
    return scores


def history_requests(case: Case, run: str, now: float) -> list[Any]:
    """The case's history as outcome reports of this run (`run` suffixes their ids).
    A report naming only an action type reports the first workflow of that type in
    the case's catalog (by id); with none there, nothing of the type can be chosen
    again, and it is reported declined."""
    from hapi.v1 import outcome_pb2

    requests = []
    for report in case.history:
        body = {k: v for k, v in report.items() if k not in ("minutesAgo", "actionType")}
        if "actionType" in report:
            workflow = _workflow_of_type(case, str(report["actionType"]))
            if workflow is not None:
                body["executed"] = {"workflowId": workflow.workflow_id, "version": workflow.version}
            else:
                for result in ("failed", "succeeded"):
                    body.pop(result, None)
                body["declined"] = {"reason": f"no workflow of type {report['actionType']}"}
        request = json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())
        request.remediation_id = f"{request.remediation_id}-{run}"
        request.completed_at.FromSeconds(int(now - 60 * float(report["minutesAgo"])))
        requests.append(request)
    return requests


def _workflow_of_type(case: Case, action_type: str) -> Any:
    from hapi_grpc.adapters.catalog.loader import load_bundled_catalog, load_catalog_file

    catalog = load_catalog_file(case.catalog_file) if case.catalog_file else load_bundled_catalog()
    typed = sorted(
        (w for w in catalog if w.action_type == action_type), key=lambda w: w.workflow_id
    )
    return typed[0] if typed else None


async def _one_run(stub: Any, case: Case, repeat: int, timeout: float) -> RunScore:
    request = run_request(case, repeat)
    run = request.incident.remediation_id.rpartition("-eval-")[2]
    started = time.monotonic()
    try:
        for report in history_requests(case, run, time.time()):
            await stub.ReportRemediationOutcome(report, timeout=timeout)
        started = time.monotonic()  # the latency is the analysis's, not the history's setup
        response = await stub.AnalyzeIncident(request, timeout=timeout)
    except grpc.aio.AioRpcError as exc:
        error = f"{exc.code().name}: {exc.details()}"
        return score_run(case, repeat, None, latency=time.monotonic() - started, error=error)
    latency = time.monotonic() - started
    result = json_format.MessageToDict(response.result, preserving_proto_field_name=True)
    return score_run(case, repeat, result, latency=latency)
