"""Patterns that read model replies, tool arguments and log lines take linear time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from hapi_grpc.domain.answer_json import extract_json_object
from hapi_grpc.toolsets.kubernetes.log_facts import _CONFIG_ERROR
from hapi_grpc.toolsets.prometheus.tools import duration_seconds

# Each input is tried at growing sizes, so that a quadratic reader fails fast.
_SIZES = (4 * 1024, 64 * 1024)
# CPU seconds for 64 KB; the backtracking patterns needed 0.6 s for 4 KB of digits.
_LIMIT_SECONDS = 0.1


def _assert_linear(read: Callable[[str], object], unit: str) -> None:
    for size in _SIZES:
        text = (unit * (size // len(unit) + 1))[:size]
        start = time.process_time()
        read(text)
        seconds = time.process_time() - start
        assert seconds < _LIMIT_SECONDS * size / _SIZES[-1] + 0.005, (size, unit)


@pytest.mark.parametrize("unit", ["1", "1.", "9.9", "1m1", "ms"])
def test_durations_from_arguments(unit: str) -> None:
    _assert_linear(duration_seconds, unit)


def test_durations_still_read() -> None:
    assert duration_seconds("1h30m") == 5400
    assert duration_seconds("250ms") == 0.25
    assert duration_seconds("1h 30m") is None
    assert duration_seconds("\u0665m") is None  # digits are ASCII digits
    assert duration_seconds("1m" * 33) is None  # no duration is that long
    assert duration_seconds("5m\ud800") is None  # a lone surrogate is no error


@pytest.mark.parametrize("unit", ["```json\n", "``` \t", "```\n```", "```"])
def test_fenced_model_replies(unit: str) -> None:
    _assert_linear(extract_json_object, unit)


def test_fenced_reply_still_read() -> None:
    reply = 'Here:\n```json\n{"rca": "oom", "x": "\ud800"}\n```\n'
    found = extract_json_object(reply)
    assert found is not None and found["rca"] == "oom"


@pytest.mark.parametrize("unit", ["config ", "env var ", "missing ", "settings bad "])
def test_config_error_lines(unit: str) -> None:
    _assert_linear(_CONFIG_ERROR.search, unit)
    assert _CONFIG_ERROR.search("FATAL: Configuration key DB_HOST missing") is not None
