"""The built-in analyst's parameter readers: what they take from caller text, in linear time."""

from __future__ import annotations

import time

from hapi_grpc.adapters.llm.builtin_parameters import Facts, fix_parameters


def _facts(error_text: str, kind: str = "Pod", name: str = "web-api-7d9f8c6b5-x2k4q") -> Facts:
    return Facts("ImagePullBackOff", "high", "pod", "shop", kind, name, error_text, {})


def test_values_read_from_the_alert_text() -> None:
    facts = _facts("Unable to retrieve some image pull secrets (regcred); revision 6 was healthy")
    assert facts.value_for("PULL_SECRET_NAME") == "regcred"
    assert facts.value_for("REVISION") == 6
    assert _facts("Previous Revision 4 ok").value_for("ROLLBACK_REVISION") == 4
    assert facts.value_for("DEPLOYMENT_NAME") == "web-api"
    assert _facts("", name="web").value_for("DEPLOYMENT_NAME") is None


def test_validator_hints_applied() -> None:
    specs = [{"name": "MODE", "required": True}, {"name": "COUNT", "required": True}]
    errors = [
        {"parameter": "MODE", "code": "INVALID", "message": "unknown; did you mean 'fast'?"},
        {"parameter": "COUNT", "code": "INVALID", "message": "a number (e.g. 3)"},
    ]
    assert fix_parameters({"MODE": "fsat"}, errors, specs) == {"MODE": "fast", "COUNT": 3}


def test_hostile_text_read_in_linear_time() -> None:
    # Near-misses at every position: a backtracking reader retries each of them.
    text = ("pull secret " * 400)[:4000] + "é" * 60_000
    name = "a-" + "abcde-" * 40 + "x"
    start = time.process_time()
    for _ in range(20):
        facts = _facts(text + " revision 1" * 300, name=name)
        facts.value_for("PULL_SECRET_NAME")
        facts.value_for("REVISION")
        facts.value_for("DEPLOYMENT_NAME")
    assert time.process_time() - start < 1.0
