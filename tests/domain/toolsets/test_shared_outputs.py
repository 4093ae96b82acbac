"""Equal tool outputs of different investigations are held once, within a bound."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain import sensitive
from hapi_grpc.domain.investigation.observer import NO_OBSERVER
from hapi_grpc.domain.llm import ToolCall
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.domain.toolsets.shared_texts import RedactedOutputs, SharedTexts
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from tests.fakes.tool_doubles import PayloadTool


def catalogue() -> dict[str, Any]:
    """A new, equal answer on every call, as a catalog search gives."""
    hits = [{"workflow_id": f"wf-{n}-v1", "description": "restart " * 20} for n in range(8)]
    return {"workflows": hits}


def investigation() -> ToolDispatcher:
    toolset = Toolset(
        "catalog",
        [PayloadTool("list_workflows", "Lists workflows.", catalogue)],
        ToolsetLimits(max_calls=3, call_timeout=5),
    )
    return ToolDispatcher([toolset], NO_OBSERVER)


async def test_investigations_that_get_the_same_output_hold_one_copy() -> None:
    call = ToolCall(id="1", name="list_workflows", arguments="{}")
    first = (await investigation().run(call)).record.result
    second = (await investigation().run(call)).record.result
    assert len(first) > 512
    assert second == first and second is first


def texts(n: int, size: int) -> list[str]:
    # Built at run time: equal literals would be one object already.
    return ["".join((str(i), "x" * size)) for i in range(n)]


def test_an_equal_text_is_returned_as_the_one_remembered() -> None:
    shared = SharedTexts(max_chars=10_000, min_chars=100)
    first, equal = texts(1, 500)[0], texts(1, 500)[0]
    assert first is not equal
    assert shared.share(first) is first
    assert shared.share(equal) is first


def test_short_texts_are_not_remembered() -> None:
    shared = SharedTexts(max_chars=10_000, min_chars=100)
    first, equal = texts(1, 50)[0], texts(1, 50)[0]
    shared.share(first)
    assert shared.share(equal) is equal
    assert shared.chars == 0


def test_what_is_remembered_stays_within_its_bound_oldest_first_out() -> None:
    shared = SharedTexts(max_chars=10_000, min_chars=100)
    originals = texts(30, 999)
    for text in originals:
        shared.share(text)
    assert shared.chars <= 10_000
    newest, oldest = texts(30, 999)[-1], texts(30, 999)[0]
    assert shared.share(newest) is originals[-1]
    assert shared.share(oldest) is not originals[0]  # forgotten, remembered anew
    larger_than_the_bound = "y" * 20_000
    assert shared.share(larger_than_the_bound) is larger_than_the_bound
    assert shared.chars <= 10_000


async def test_an_equal_output_hides_a_secret_registered_since_it_was_first_redacted() -> None:
    secret = "s3cr3t-value-registered-late"

    def leaky() -> dict[str, Any]:
        return {**catalogue(), "note": f"connection uses {secret}"}

    def with_leak() -> ToolDispatcher:
        toolset = Toolset(
            "catalog",
            [PayloadTool("list_workflows", "Lists workflows.", leaky)],
            ToolsetLimits(max_calls=3, call_timeout=5),
        )
        return ToolDispatcher([toolset], NO_OBSERVER)

    call = ToolCall(id="1", name="list_workflows", arguments="{}")
    before = (await with_leak().run(call)).record.result
    assert secret in before  # not known as a secret yet
    sensitive.register_secret(secret, owner="test-late-secret")
    try:
        after = (await with_leak().run(call)).record.result
    finally:
        sensitive.replace_secrets("test-late-secret", ())
    assert secret not in after and sensitive.REDACTED in after


def test_redacted_outputs_are_computed_once_per_text_within_a_bound() -> None:
    memo = RedactedOutputs(max_chars=10_000, min_chars=100)
    calls: list[str] = []

    def redact(text: str, limit: int) -> str:
        calls.append(text)
        return text[:limit]

    first, equal = texts(1, 500)[0], texts(1, 500)[0]
    assert memo.get(first, 300, redact) == memo.get(equal, 300, redact) == first[:300]
    assert memo.get(equal, 200, redact) == first[:200]  # another cap: its own entry
    assert len(calls) == 2
    short = texts(1, 50)[0]
    memo.get(short, 300, redact)
    memo.get(short, 300, redact)
    assert calls.count(short) == 2  # short outputs are not held
    for text in texts(30, 999):
        memo.get(text, 300, redact)
    assert len(calls) == 34
    assert memo.get(texts(1, 500)[0], 300, redact) == first[:300]
    assert len(calls) == 35  # forgotten, oldest first
