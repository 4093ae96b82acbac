"""The answers a toolset's port failures become, word for word."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hapi_grpc.adapters.kubernetes.reader import KubeFailure, KubeFailureKind
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.toolsets.kubernetes.scope import ScopeRefusal
from hapi_grpc.toolsets.kubernetes.session import guarded as kubernetes_guarded
from hapi_grpc.toolsets.prometheus.source import MetricsQueryError as MetricsQueryFailure
from hapi_grpc.toolsets.prometheus.source import MetricsUnavailableError as MetricsSourceUnavailable
from hapi_grpc.toolsets.prometheus.tools import metrics_failures


@dataclass(frozen=True)
class Raising:
    exc: Exception

    async def run(self, args: object, ctx: ToolContext) -> ToolResult:
        raise self.exc


def ctx() -> ToolContext:
    return ToolContext(1.0)


async def answer(guard: object, exc: Exception) -> ToolResult:
    run = guard(Raising.run)  # type: ignore[operator]
    result: ToolResult = await run(Raising(exc), None, ctx())
    return result


@pytest.mark.parametrize(
    ("exc", "status", "payload"),
    [
        (ScopeRefusal("not here."), ToolCallStatus.INVALID_ARGUMENTS, {"error": "not here."}),
        (
            KubeFailure(KubeFailureKind.INVALID, "bad selector"),
            ToolCallStatus.INVALID_ARGUMENTS,
            {"error": "bad selector"},
        ),
        (
            KubeFailure(KubeFailureKind.TIMEOUT, "the cluster was slow"),
            ToolCallStatus.TIMEOUT,
            {"error": "the cluster was slow; go on without it."},
        ),
        (
            KubeFailure(KubeFailureKind.FORBIDDEN, "forbidden"),
            ToolCallStatus.ERROR,
            {"error": "forbidden"},
        ),
    ],
)
async def test_kubernetes_failures(
    exc: Exception, status: ToolCallStatus, payload: dict[str, str]
) -> None:
    result = await answer(kubernetes_guarded, exc)
    assert (result.status, result.payload) == (status, payload)


async def test_metrics_failures_name_the_toolset() -> None:
    rejected = await answer(metrics_failures("prometheus"), MetricsQueryFailure("parse error"))
    assert rejected.status is ToolCallStatus.INVALID_ARGUMENTS
    assert rejected.payload == {"error": "parse error", "hint": "fix the request and call again"}
    down = await answer(metrics_failures("alertmanager"), MetricsSourceUnavailable("HTTP 503"))
    assert down.status is ToolCallStatus.ERROR
    assert down.payload == {
        "error": "the alertmanager toolset is unavailable now (HTTP 503); go on without it."
    }


async def test_other_exceptions_propagate() -> None:
    with pytest.raises(BudgetExhaustedError):
        await answer(metrics_failures("prometheus"), BudgetExhaustedError("spent"))
    with pytest.raises(MetricsQueryFailure):
        await answer(kubernetes_guarded, MetricsQueryFailure("not a cluster failure"))
