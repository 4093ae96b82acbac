"""The `kubernetes` tools' per-call output cap: whole items are dropped from the end."""

from __future__ import annotations

from typing import Any

import pytest

from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.toolsets.kubernetes import session as session_module
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope
from hapi_grpc.toolsets.kubernetes.session import DATA_KEY, KubernetesSession

LIMIT = 11_744


def _session() -> KubernetesSession:
    return KubernetesSession(
        None,  # type: ignore[arg-type]  # answer() reads nothing from the cluster
        KubernetesScope.of((), (), ()),
        per_call_chars=LIMIT,
        investigation_chars=10**9,
    )


@pytest.mark.parametrize("count", [1, 30, 100, 500])
def test_the_most_leading_items_that_fit_are_kept(count: int) -> None:
    lines = [f"{i:04d} " + "x" * (i % 700) for i in range(count)]
    result = _session().answer({"kind": "PodLog", "lines": list(lines)}, "lines")
    shown = result.payload[DATA_KEY]["lines"]
    text = compact_json(result.payload)
    assert len(text) <= LIMIT
    assert shown == lines[: len(shown)]
    if len(shown) < count:
        assert result.payload["truncated"] == (
            f"showing {len(shown)} of {count} lines: output cap reached"
        )
        one_more = dict(result.payload)
        one_more[DATA_KEY] = {"kind": "PodLog", "lines": lines[: len(shown) + 1]}
        assert len(compact_json(one_more)) > LIMIT  # no room for the next line
    else:
        assert "truncated" not in result.payload


def test_cutting_a_long_list_serializes_it_a_few_times_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0

    def counted(value: Any) -> str:
        nonlocal calls
        calls += 1
        return compact_json(value)

    monkeypatch.setattr(session_module, "compact_json", counted)
    lines = ["x" * 480 + str(i) for i in range(500)]  # the longest log a call may ask for
    result = _session().answer({"kind": "PodLog", "lines": lines}, "lines")
    assert result.payload["truncated"].startswith("showing 24 of 500 lines")
    assert calls <= 12  # bisection: ~log2(500) + 2, not one per dropped line
