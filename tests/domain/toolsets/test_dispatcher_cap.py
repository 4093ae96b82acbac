"""A tool result is cut to its cap before it is redacted, and no secret leaks at the cut."""

from __future__ import annotations

import time
from typing import Any

from hapi_grpc.domain import sensitive
from hapi_grpc.domain.investigation.observer import NO_OBSERVER
from hapi_grpc.domain.llm import ToolCall
from hapi_grpc.domain.sensitive import REDACTED, redact
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from tests.fakes.tool_doubles import PayloadTool


async def _result(payload: Any, cap: int) -> str:
    toolset = Toolset(
        "logs",
        [PayloadTool("read_logs", "Returns log text.", lambda: payload)],
        ToolsetLimits(max_calls=3, call_timeout=30, max_output_chars=cap),
    )
    dispatcher = ToolDispatcher([toolset], NO_OBSERVER)
    return (await dispatcher.run(ToolCall(id="1", name="read_logs", arguments="{}"))).record.result


async def test_a_huge_result_costs_what_its_cap_does() -> None:
    line = "2026-03-01T12:00:07Z INFO api handled GET /orders/7 in 12ms token=abc123 user=42\n"
    logs = line * (16 * 1024 * 1024 // len(line))  # 16 MB of log, one tool result
    start = time.process_time()
    result = await _result({"log": logs}, 12_000)
    # Redacting all 16 MB took ~8 s (2 MB/s); the cap plus a margin takes ~1 ms.
    # What remains is serialising the payload (~0.1 s).
    assert time.process_time() - start < 1.0
    assert "abc123" not in result and f"token={REDACTED}" in result
    assert "more characters]" in result and len(result) < 12_100


async def test_a_secret_cut_by_the_redaction_window_is_not_shown() -> None:
    # Redactions early in the text shrink it, so text from the end of the
    # window redacted past the cap would come into view: a token cut by that
    # window's end is too short for its pattern and must stay out of sight.
    cap = 2_000
    shrinking = "token=" + "v" * 100 + " "
    prefix = shrinking * 50  # 5,350 characters that redact to 850
    token = "ghp_" + "A" * 36
    window = cap + sensitive._CUT_MARGIN  # characters of the result redacted
    for end in range(2, len(token) + 2):  # the window ends `end` characters into the token
        # The result is JSON: the text starts after a quote.
        text = prefix + "x" * (window - len(prefix) - 2 - end) + " " + token + " " + "y" * 20_000
        result = await _result(text, cap)
        assert "ghp_" not in result, end
        assert "v" * 10 not in result
    # Whole, the token is hidden by its shape: the cut never shows more than that.
    assert token not in redact(f"see {token} here")


async def test_short_results_are_redacted_and_cut_as_before() -> None:
    text = "GIT_PASSWORD=hunter2 " + "z" * 300
    result = await _result(text, 256)
    assert result.startswith(f'"GIT_PASSWORD={REDACTED} ')
    assert result.endswith("more characters]")
