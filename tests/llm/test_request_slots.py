"""Model request slots (HAPI_LLM_MAX_CONCURRENT_REQUESTS) against a scripted model server."""

from __future__ import annotations

import asyncio
import time

import pytest

from hapi_grpc.adapters.llm.anthropic import AnthropicProvider
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import LLMUnavailableError, ResourceExhaustedError
from hapi_grpc.domain.llm import ChatMessage
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

KEY = "sk-test-SECRET-123"


def conversation(name: str) -> list[ChatMessage]:
    # A distinct first message per call: each plays its own script.
    return [ChatMessage("user", f"Investigate {name}")]


def provider(server: ScriptedLLMServer, slots: int, **kwargs: object) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        server.base_url,
        "gpt-test",
        KEY,
        max_concurrent_requests=slots,
        backoff_base=0.01,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_calls_beyond_the_limit_wait_for_a_slot() -> None:
    async with ScriptedLLMServer("openai", [Step.text("ok", delay=0.3)]) as server:
        llm = provider(server, slots=2)
        try:
            with budget_scope(Budget.from_timeout(5.0)):
                results = await asyncio.gather(
                    *[llm.complete(conversation(f"incident {i}"), []) for i in range(4)]
                )
        finally:
            await llm.close()
    assert [r.content for r in results] == ["ok"] * 4
    arrivals = sorted(r.received_at for r in server.requests)
    # Two at once; the other two only when the first two had their answers.
    assert arrivals[1] - arrivals[0] < 0.2
    assert arrivals[2] - arrivals[0] >= 0.25


async def test_no_slot_before_the_deadline_is_resource_exhausted_with_a_retry_hint() -> None:
    script = [Step.text("slow", delay=2.0)]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, slots=1)
        try:
            holder = asyncio.create_task(llm.complete(conversation("holder"), []))
            assert await server.wait_requests(1)
            started = time.monotonic()
            with budget_scope(Budget.from_timeout(0.5)):
                with pytest.raises(ResourceExhaustedError) as caught:
                    await llm.complete(conversation("waiter"), [])
            waited = time.monotonic() - started
            assert (await holder).content == "slow"
        finally:
            await llm.close()
    # It waited for the slot while an attempt could still fit (0.5 s less the
    # 0.1 s minimum attempt time), then gave up before its deadline.
    assert 0.3 <= waited < 0.5
    assert caught.value.retry_after is not None and caught.value.retry_after >= 1.0
    assert "1 request slots are busy" in caught.value.message
    assert len(server.requests) == 1  # the waiter never reached the provider


async def test_a_spent_budget_with_every_slot_busy_is_refused_at_once() -> None:
    async with ScriptedLLMServer("openai", [Step.text("slow", delay=1.0)]) as server:
        llm = provider(server, slots=1)
        try:
            holder = asyncio.create_task(llm.complete(conversation("holder"), []))
            assert await server.wait_requests(1)
            started = time.monotonic()
            with budget_scope(Budget.from_timeout(0.05)):
                with pytest.raises(ResourceExhaustedError):
                    await llm.complete(conversation("late"), [])
            assert time.monotonic() - started < 0.05
            await holder
        finally:
            await llm.close()


async def test_slots_are_released_after_errors_and_cancellation() -> None:
    script = [Step.error(500, "boom")]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, slots=1, max_retries=0)
        try:
            with pytest.raises(LLMUnavailableError):
                await llm.complete(conversation("fails"), [])
            assert llm.slots.in_use == 0
            server_slow = ScriptedLLMServer("openai", [Step.text("late", delay=5.0)])
            async with server_slow:
                slow = provider(server_slow, slots=1)
                try:
                    task = asyncio.create_task(slow.complete(conversation("cancelled"), []))
                    assert await server_slow.wait_requests(1)
                    waiting = asyncio.create_task(slow.complete(conversation("queued"), []))
                    await asyncio.sleep(0.05)
                    assert slow.slots.waiting == 1
                    waiting.cancel()
                    task.cancel()
                    for cancelled in (task, waiting):
                        with pytest.raises(asyncio.CancelledError):
                            await cancelled
                    assert (slow.slots.in_use, slow.slots.waiting) == (0, 0)
                finally:
                    await slow.close()
        finally:
            await llm.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_connection_pool_is_sized_from_the_slot_limit(kind: str) -> None:
    async with ScriptedLLMServer(kind, [Step.text("ok")]) as server:  # type: ignore[arg-type]
        llm: OpenAICompatibleProvider | AnthropicProvider
        if kind == "openai":
            llm = provider(server, slots=7)
        else:
            llm = AnthropicProvider(server.base_url, api_key=KEY, max_concurrent_requests=7)
        try:
            await llm.complete(conversation("pool"), [])
            session = llm.http.transport._session  # type: ignore[attr-defined]
            assert session is not None
            assert session.connector is not None
            assert session.connector.limit == 7  # not aiohttp's default of 100
            assert session.timeout.total == 120.0  # not aiohttp's default of 300 s
        finally:
            await llm.close()
