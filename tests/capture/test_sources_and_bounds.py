"""Captured through the real server: the alerts a real Alertmanager answered, the
history an aiohttp Data Storage server answered, and the directory's byte bound
(the oldest cases removed to make room, the directory never over its bound)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.capture.unpack import unpack
from hapi_grpc.cases.case import load_case
from hapi_grpc.config import Settings
from hapi_grpc.domain.investigation.engine import EngineSettings
from hapi_grpc.toolsets.registry import open_toolsets
from tests.adapters.history.history_server import HistoryServer
from tests.adapters.history.test_datastorage_history import entry
from tests.capture.test_outcomes import analyze_request, wait_for
from tests.domain.history.test_history_by_action_type import CATALOG, choose, data_storage, search
from tests.domain.policy.test_grpc import request
from tests.fakes.alertmanager_server import AlertmanagerServer
from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server
from tests.helpers.premises import premises_not_under_test
from tests.toolsets.conftest import final_answer, serving
from tests.toolsets.prometheus.conftest import alertmanager  # noqa: F401
from tests.toolsets.remediation_history.test_history_tool import HISTORY


def written(root: Path) -> list[Path]:
    """The cases captured, once the server closed their segment (unpacked first)."""
    if not root.exists():
        return []
    unpack(root)
    return [d for d in root.iterdir() if not d.name.startswith(".") and (d / "case.yaml").exists()]


def size(case: Path) -> int:
    return sum(f.stat().st_size for f in case.rglob("*") if f.is_file())


async def test_the_alerts_alertmanager_answered_are_captured(
    alertmanager: AlertmanagerServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    namespace = "capture-alerts"
    alertmanager.post_alerts(
        [
            {
                "labels": {"alertname": "KubePodOOMKilled", "namespace": namespace,
                           "pod": f"api-{i}", "severity": "critical"},
                "annotations": {"summary": f"api-{i} OOMKilled", "token": "tok-do-not-leak"},
            }
            for i in range(2)
        ]
        + [{"labels": {"alertname": "Unrelated", "namespace": "capture-elsewhere"}}]
    )  # fmt: skip
    root = tmp_path / "captured"
    script = [
        Step.tool_calls([("alertmanager_active_alerts", {"namespace": namespace})]),
        final_answer(),
    ]
    async with serving(script, alertmanager_url=alertmanager.url, capture_dir=str(root)) as served:
        await served.stub.AnalyzeIncident(analyze_request("payments"), timeout=60)
        await wait_for(lambda: bool(written(root)))
    (case,) = written(root)
    alerts = yaml.safe_load((case / "alerts.yaml").read_text())
    pods = sorted(a["labels"]["pod"] for a in alerts)
    assert pods == ["api-0", "api-1"]  # what the query answered, once each
    assert all(a["labels"]["namespace"] == namespace for a in alerts)
    assert {a["annotations"]["summary"] for a in alerts} == {"api-0 OOMKilled", "api-1 OOMKilled"}
    assert "tok-do-not-leak" not in (case / "alerts.yaml").read_text()
    assert len(load_case(case).alerts) == 2  # a case the replay loads


@pytest.fixture
async def ds() -> AsyncIterator[HistoryServer]:
    server = HistoryServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def capture_history_case(
    ds: HistoryServer, root: Path, remediation_id: str, choices: int = 2
) -> Path:
    """One investigation that reads Data Storage's history, captured into `root`."""
    script = [Step.tool_calls([HISTORY]), search(), *[choose("memory-limit-patch")] * choices]
    with tempfile.TemporaryDirectory() as work:
        vouched = premises_not_under_test(Path(work), [w.workflow_id for w in CATALOG])
        history = data_storage(ds)
        opened = await open_toolsets(Settings(kubernetes="off"), history)
        async with ScriptedLLMServer("openai", script) as llm:
            provider = OpenAICompatibleProvider(
                llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
            )
            try:
                async with running_server(
                    catalog=EmbeddedCatalog(CATALOG),
                    llm=provider,
                    engine_settings=EngineSettings(tool_timeout=2.0),
                    toolsets=opened.sources,
                    history=history,
                    premises_file=vouched,
                    capture_dir=str(root),
                ) as server:
                    await server.stub.AnalyzeIncident(request(remediation_id), timeout=20)
                    await wait_for(lambda: bool(written(root)))
            finally:
                await provider.close()
                await opened.close()
    (case,) = written(root)
    return case


async def test_the_history_data_storage_answered_is_captured(
    ds: HistoryServer, tmp_path: Path
) -> None:
    ds.entries = [entry("rr-ds-earlier", 3, outcome="Success", signalResolved=True)]
    root = tmp_path / "captured"
    case = await capture_history_case(ds, root, "rr-now")
    reports: list[dict[str, Any]] = yaml.safe_load((case / "history.yaml").read_text())
    (earlier,) = reports
    assert earlier["remediationId"] == "rr-ds-earlier"
    assert earlier["target"] == {"namespace": "payments", "kind": "Deployment",
                                 "name": "payment-api"}  # fmt: skip
    assert 179 <= earlier["minutesAgo"] <= 182
    assert earlier.get("signalCleared") is True
    assert load_case(case).history[0]["remediationId"] == "rr-ds-earlier"


async def test_the_oldest_cases_make_room_within_the_directory_bound(tmp_path: Path) -> None:
    root = tmp_path / "captured"
    bound = 65536  # the smallest the setting allows
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), capture_dir=str(root)
    ) as srv:
        await srv.stub.AnalyzeIncident(analyze_request("payments"), timeout=30)
        await wait_for(lambda: len(written(root)) == 1)
    (first,) = written(root)
    fit = bound // size(first)
    assert 2 <= fit < 30, size(first)  # several cases fit, not all
    names = []
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), capture_dir=str(root), capture_max_bytes=bound
    ) as srv:
        for index in range(fit + 2):
            req = analyze_request("payments")
            req.incident.remediation_id = f"rr-evict-{index:03d}"
            await srv.stub.AnalyzeIncident(req, timeout=30)
            names.append(req.incident.remediation_id)
            await wait_for(lambda: any(d.name.startswith(names[-1]) for d in written(root)))
            await asyncio.sleep(0.01)
            assert sum(size(d) for d in written(root)) <= bound
    kept = sorted(d.name.split("-")[2] for d in written(root))
    # The case found at start went first, then the oldest written: the newest remain.
    assert first.name not in {d.name for d in written(root)}
    assert kept == [f"{i:03d}" for i in range(fit + 2)][-len(kept) :]
    assert fit - 1 <= len(kept) <= fit
