"""The coordinator keeps results in any store, but takes locks only in a shared one."""

from __future__ import annotations

import asyncio
import sys
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hapi_grpc.adapters.result_store import MemoryResultStore
from hapi_grpc.application.idempotency import Finished, IdempotencyCoordinator
from hapi_grpc.domain.errors import IncidentConflictError
from hapi_grpc.domain.result_store_port import StoredResult


async def test_a_store_only_this_process_sees_keeps_results_but_takes_no_lock() -> None:
    store = MemoryResultStore()
    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(store, result_ttl=60)
    running = asyncio.Event()
    release = asyncio.Event()
    locks_seen: list[object] = []

    async def investigate(sink: Callable[[Any], Awaitable[None]]) -> Finished:
        running.set()
        await release.wait()
        return Finished(b"result")

    call = asyncio.create_task(coordinator.run("rr-1", "fp-1", investigate))
    await running.wait()
    locks_seen.append(await store.acquire("rr-1", "someone-else/fp-1", ttl=5))
    await store.release("rr-1", "someone-else/fp-1")
    release.set()
    first = await call

    assert locks_seen == [None]  # nobody held the id's lock while it ran
    assert first.payload == b"result" and first.reused is None
    again = await coordinator.run("rr-1", "fp-1", investigate)
    assert again.reused == "stored" and again.payload == b"result"
    await coordinator.close()


async def test_concurrent_calls_still_share_one_investigation_without_the_lock() -> None:
    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(
        MemoryResultStore(), result_ttl=60
    )
    runs = 0

    async def investigate(sink: Callable[[Any], Awaitable[None]]) -> Finished:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.05)
        return Finished(b"once")

    outcomes = await asyncio.gather(
        *(coordinator.run("rr-2", "fp-2", investigate) for _ in range(5))
    )
    assert runs == 1
    assert sorted(str(o.reused) for o in outcomes) == ["None"] + ["joined"] * 4
    await coordinator.close()


async def test_a_new_investigation_computes_its_fingerprint_only_to_save_the_result() -> None:
    store = MemoryResultStore()
    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(store, result_ttl=60)
    computed: list[str] = []
    release = asyncio.Event()

    def fingerprint(value: str) -> Callable[[], str]:
        def compute() -> str:
            computed.append(value)
            return value

        return compute

    async def investigate(sink: Callable[[Any], Awaitable[None]]) -> Finished:
        await release.wait()
        return Finished(b"kept")

    call = asyncio.create_task(coordinator.run("rr-3", fingerprint("fp-3"), investigate))
    await asyncio.sleep(0.01)
    assert computed == []  # started without it

    # A second call for the id has to be told apart: both are computed, once each.
    with pytest.raises(IncidentConflictError):
        await coordinator.run("rr-3", fingerprint("fp-other"), investigate)
    assert sorted(computed) == ["fp-3", "fp-other"]
    release.set()
    await call
    assert sorted(computed) == ["fp-3", "fp-other"]  # saved with the one already computed
    stored = await store.get("rr-3")
    assert stored is not None and stored.fingerprint == "fp-3"

    # A result that is not kept never needs one.
    computed.clear()

    async def not_kept(sink: Callable[[Any], Awaitable[None]]) -> Finished:
        return Finished(b"partial", keep=False)

    await coordinator.run("rr-4", fingerprint("fp-4"), not_kept)
    assert computed == []
    await coordinator.close()


async def test_results_kept_in_memory_are_bounded_in_bytes_the_oldest_going_first() -> None:
    store = MemoryResultStore(max_bytes=100_000)
    for i in range(40):  # 40 results of 5 kB: twice the bound
        await store.put(f"rr-{i:02d}", StoredResult("f" * 64, 0.0, bytes(5_000)), ttl=60)
    kept = [await store.get(f"rr-{i:02d}") is not None for i in range(40)]
    assert kept == sorted(kept) and kept[-1]
    assert 15 <= sum(kept) <= 20
    assert store.bytes <= 100_000


async def test_what_a_kept_result_costs_in_memory_is_within_what_is_counted() -> None:
    store = MemoryResultStore(max_entries=10**6, max_bytes=10**12)
    results = [
        (f"payments/3f2a9c1b0d4e5f60/rr-{i:06d}", StoredResult(f"{i:064x}", 1.0, bytes(size)))
        for i, size in enumerate([300, 4_000] * 1_000)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key, result in results:
            await store.put(key, result, ttl=60)
        # The results themselves (the caller's objects) are counted too.
        spent = (
            tracemalloc.get_traced_memory()[0]
            - before
            + sum(
                sys.getsizeof(r.payload) + sys.getsizeof(r.fingerprint) + sys.getsizeof(k)
                for k, r in results
            )
        )
    finally:
        tracemalloc.stop()
    assert spent <= store.bytes, (spent, store.bytes)
