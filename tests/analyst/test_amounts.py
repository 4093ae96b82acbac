"""Quantities in every notation Kubernetes accepts, and the values derived from them."""

from __future__ import annotations

import pytest

from hapi_grpc.analyst.amounts import (
    bytes_of,
    cores_of,
    memory_after_oom,
    write_bytes,
    write_cores,
)
from hapi_grpc.analyst.candidates import fill, respelled

MI = 1024**2
GI = 1024**3


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("300G", 300 * 10**9),
        ("805306368", 805306368),
        ("0.75Gi", 805306368),
        ("768Mi", 805306368),
        ("786432Ki", 805306368),
        ("1e9", 10**9),
        ("1.5G", 1_500_000_000),
        (805306368, 805306368),
    ],
)
def test_memory_and_storage_in_every_notation(text: object, amount: int) -> None:
    assert bytes_of(text) == amount


@pytest.mark.parametrize(
    ("text", "cores"), [("500m", 0.5), ("2", 2.0), ("1.5", 1.5), ("250m", 0.25)]
)
def test_cpu_in_every_notation(text: str, cores: float) -> None:
    assert cores_of(text) == cores


def test_unreadable_quantities_are_none_not_zero() -> None:
    assert bytes_of("lots") is None and bytes_of("") is None and bytes_of(None) is None
    assert cores_of("1 core") is None


def test_memory_after_an_oom_kill_follows_the_autoscaler_rule() -> None:
    # +20% over the higher of limit and peak, at least +100Mi, whole Mi.
    assert memory_after_oom(2 * GI, None) == int(2 * GI * 1.2 / MI + 1) * MI
    assert memory_after_oom(256 * MI, None) == 356 * MI  # +100Mi beats +20%
    assert memory_after_oom(bytes_of("0.75Gi") or 0, 900 * MI) == 1080 * MI
    # Whatever the notation of the same limit, the same new limit.
    assert memory_after_oom(bytes_of("805306368") or 0, None) == memory_after_oom(
        bytes_of("768Mi") or 0, None
    )


def test_written_in_the_notation_the_schema_accepts() -> None:
    assert write_bytes(1536 * MI, {"pattern": "^[0-9]+(Ki|Mi|Gi|Ti)$"}) == "1536Mi"
    assert write_bytes(2 * GI, {"pattern": "^[0-9]+(Ki|Mi|Gi|Ti)$"}) == "2Gi"
    assert write_bytes(2 * GI, {"pattern": "^[0-9]+$"}) == str(2 * GI)
    assert write_bytes(300 * 10**9, {"pattern": "^[0-9]+G$"}) == "300G"
    assert write_bytes(2 * GI, {}) == "2Gi"
    assert write_bytes(2 * GI, {"pattern": "^[0-9]+Pi$"}) is None
    assert write_cores(0.9615, {"type": "float"}) == 1.0
    assert write_cores(1.04, {"type": "number"}) == 1.1
    assert write_cores(0.96, {"type": "string"}) == "960m"


def test_parameters_filled_by_role_from_the_values_only() -> None:
    # Roles as the catalog search shows them (bound by the premise packs).
    specs = [
        {"name": "NAMESPACE", "type": "string", "required": True, "role": "namespace"},
        {"name": "DEPLOYMENT_NAME", "type": "string", "required": True, "role": "workload"},
        {
            "name": "MEMORY_LIMIT_NEW",
            "type": "string",
            "required": True,
            "default": "512Mi",
            "role": "memory_limit",
        },
        {"name": "GRACE_PERIOD_SECONDS", "type": "integer", "default": 30},
        {"name": "LIMIT", "type": "string", "role": "memory_limit", "pattern": "^[0-9]+Mi$"},
        {"name": "NOTE", "type": "string", "default": "x"},
    ]
    values = {"namespace": "shop", "workload": "api", "memory_limit_bytes": 1080 * MI}
    filled = fill(specs, values)
    assert filled.missing == ""
    # Optional parameters with no value are left out (not their defaults); a parameter
    # with no role gets nothing, whatever its name.
    assert filled.parameters == {
        "NAMESPACE": "shop",
        "DEPLOYMENT_NAME": "api",
        "MEMORY_LIMIT_NEW": "1080Mi",
        "LIMIT": "1080Mi",
    }
    # Without the evidence's limit, the required parameter stays unfilled: never 512Mi.
    assert fill(specs, {"namespace": "shop", "workload": "api"}).missing == "MEMORY_LIMIT_NEW"


def test_only_a_respelling_the_validator_suggests_is_taken() -> None:
    errors = [{"parameter": "MODE", "code": "INVALID", "message": "unknown; did you mean 'Fast'?"}]
    assert respelled({"MODE": "fast"}, errors) == {"MODE": "Fast"}
    above = [{"parameter": "COUNT", "code": "ABOVE_MAXIMUM", "message": "at most 10"}]
    assert respelled({"COUNT": 13}, above) is None  # never clamped to fit
