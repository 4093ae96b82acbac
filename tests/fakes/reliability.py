"""The reliability suite: attack a real `hapi-grpc serve` from outside and tally the result.

Shared by `tests/reliability/` (CI-sized) and `bench/reliability.py` (full run).
A `Harness` starts fault-injecting Data Storage and model servers on loopback
(`tests.fakes.faults`) and the server as a child process pointed at them through
its documented settings, everything else at its shipped defaults. Each
category sends raw bytes through a real channel and checks every answer
against the pass rules:

- input the caller got wrong answers INVALID_ARGUMENT (NOT_FOUND for an unknown
  workflow), never UNKNOWN/INTERNAL; no response is larger than
  `MAX_RESPONSE_BYTES` (no amplification);
- a dependency fault gives a result flagged `needs_human_review` with a reason,
  UNAVAILABLE or DEADLINE_EXCEEDED, and nothing ends after the caller's deadline;
- after the run a valid call succeeds, the log holds no traceback and no API key,
  and RSS / open fds are within `RSS_GROWTH_BOUND` / `FD_GROWTH_BOUND` of the start
  (measured after a warm-up, so imports and first-call caches are not counted).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import grpc

from hapi.v1 import analysis_pb2, service_pb2
from tests.fakes import reliability_cases as cases
from tests.fakes.faults import FaultyDataStorage, FaultyModel
from tests.fakes.serve_process import ServeProcess

MiB = 1024 * 1024
RSS_GROWTH_BOUND = 64 * MiB
FD_GROWTH_BOUND = 16
MAX_RESPONSE_BYTES = 256 * 1024
DEADLINE_SLACK = 1.0  # client-side scheduling noise on two shared cores
API_KEY = "sk-reliability-4f1c9a7e2b6d"
TRACEBACK = "Traceback (most recent call last)"

C = grpc.StatusCode
DEPENDENCY_CODES = frozenset({C.UNAVAILABLE, C.DEADLINE_EXCEEDED})


@dataclass
class Sizes:
    """How much of each category to run."""

    payloads_per_method: int = 40
    fault_calls: int = 3
    fault_deadline: float = 3.0
    cancel_calls: int = 200
    cancel_turn_delay: float = 0.3
    soak_seconds: float = 10.0
    soak_concurrency: int = 16
    sigterm_calls: int = 200
    sigterm_turn_seconds: float = 1.0
    seed: int = 1


@dataclass
class Category:
    name: str
    tried: int = 0
    passed: int = 0
    observed: Counter[str] = field(default_factory=Counter)  # failure -> count
    answers: Counter[str] = field(default_factory=Counter)  # status code -> count

    @property
    def failed(self) -> int:
        return self.tried - self.passed

    def check(self, ok: bool, what: str, answer: Outcome | None = None) -> None:
        self.tried += 1
        if answer is not None:
            self.answers[answer.code.name] += 1
        if ok:
            self.passed += 1
        else:
            self.observed[what] += 1


@dataclass
class Report:
    categories: dict[str, Category] = field(default_factory=dict)
    resources: dict[str, dict[str, float]] = field(default_factory=dict)

    def category(self, name: str) -> Category:
        return self.categories.setdefault(name, Category(name))

    @property
    def ok(self) -> bool:
        return all(c.failed == 0 for c in self.categories.values())

    def failures(self) -> list[str]:
        return [
            f"[{c.name}] {count}x {what}"
            for c in self.categories.values()
            for what, count in c.observed.most_common()
        ]

    def table(self) -> str:
        lines = [f"{'category':<44} {'tried':>6} {'passed':>6} {'failed':>6}  answers"]
        for c in self.categories.values():
            answers = " ".join(f"{code}:{n}" for code, n in c.answers.most_common())
            lines.append(f"{c.name:<44} {c.tried:>6} {c.passed:>6} {c.failed:>6}  {answers}")
        lines.append("")
        lines.append(f"{'server process':<22} {'start':>8} {'end':>8} {'peak':>8}  bound")
        for name, values in self.resources.items():
            lines.append(
                f"{name:<22} {values.get('start', 0):>8.0f} {values.get('end', 0):>8.0f}"
                f" {values.get('peak', 0):>8.0f}  {values.get('bound_text', '')}"
            )
        failures = self.failures()
        if failures:
            lines += ["", "failures (count x observed):", *(f"  {f}" for f in failures[:60])]
        return "\n".join(lines)


@dataclass
class Outcome:
    code: grpc.StatusCode
    details: str
    elapsed: float
    result: analysis_pb2.AnalysisResult | None = None
    size: int = 0

    def describe(self) -> str:
        text = f"{self.code.name} {self.details[:160]!r}"
        if self.result is not None and self.result.needs_human_review:
            reason = analysis_pb2.HumanReviewReason.Name(self.result.human_review_reason)
            text += f" review={reason}"
        return text


async def call(
    channel: grpc.aio.Channel,
    method: str,
    payload: bytes,
    timeout: float,
    cancel_after: float | None = None,
) -> Outcome:
    """One raw call; a CANCELLED outcome when the client cancelled it after `cancel_after` s."""
    started = time.monotonic()
    messages: list[bytes] = []
    if method == cases.STREAM:
        stream = channel.unary_stream(method)(payload, timeout=timeout)

        async def consume() -> None:
            async for message in stream:
                messages.append(message)

        rpc: grpc.aio.Call = stream
        work: Awaitable[object] = consume()
    else:
        unary = channel.unary_unary(method)(payload, timeout=timeout)
        rpc, work = unary, unary
    task = asyncio.ensure_future(work)
    try:
        if cancel_after is not None:
            done, _ = await asyncio.wait({task}, timeout=cancel_after)
            if not done:
                rpc.cancel()
        reply = await task
        if method != cases.STREAM:
            messages.append(reply)  # type: ignore[arg-type]
    except asyncio.CancelledError:
        if not rpc.cancelled():
            raise
        return Outcome(C.CANCELLED, "cancelled by the client", time.monotonic() - started)
    except grpc.aio.AioRpcError as exc:
        return Outcome(exc.code(), exc.details() or "", time.monotonic() - started)
    elapsed = time.monotonic() - started
    return Outcome(C.OK, "", elapsed, _result(method, messages), sum(map(len, messages)))


def _result(method: str, messages: list[bytes]) -> analysis_pb2.AnalysisResult | None:
    if method == cases.ANALYZE:
        return service_pb2.AnalyzeIncidentResponse.FromString(messages[-1]).result
    if method == cases.STREAM and messages:
        last = service_pb2.AnalyzeIncidentStreamResponse.FromString(messages[-1])
        return last.result if last.HasField("result") else None
    return None


def selected_cleanly(outcome: Outcome) -> bool:
    result = outcome.result
    return (
        outcome.code == C.OK
        and result is not None
        and bool(result.selected_workflow.workflow_id)
        and not result.needs_human_review
    )


def dependency_rule(outcome: Outcome, *, recovered_ok: bool = False) -> bool:
    """A dependency fault: review with a reason, UNAVAILABLE or DEADLINE_EXCEEDED."""
    if outcome.code in DEPENDENCY_CODES:
        return True
    result = outcome.result
    if outcome.code != C.OK or result is None:
        return False
    if result.needs_human_review:
        return result.human_review_reason != analysis_pb2.HUMAN_REVIEW_REASON_UNSPECIFIED
    return recovered_ok and selected_cleanly(outcome)


def in_time(outcome: Outcome, timeout: float) -> bool:
    return outcome.elapsed <= timeout + DEADLINE_SLACK


async def bounded_gather(limit: int, jobs: list[Callable[[], Awaitable[None]]]) -> None:
    gate = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await job()

    await asyncio.gather(*(run(job) for job in jobs))


async def scrape_in_flight(url: str) -> float | None:
    """Sum of hapi_grpc_server_in_flight over methods, from /metrics."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url, timeout=5) as resp:
            text = await resp.text()
    except (aiohttp.ClientError, TimeoutError):
        return None
    values = re.findall(r"^hapi_grpc_server_in_flight\{[^}]*\} ([0-9.e+-]+)$", text, re.M)
    return sum(float(v) for v in values)


class Harness:
    """Fake Data Storage + fake model + `hapi-grpc serve` + a channel to it."""

    def __init__(self, **settings: str) -> None:
        self.ds = FaultyDataStorage()
        self.model = FaultyModel(api_key=API_KEY)
        self._settings = settings
        self.server: ServeProcess | None = None
        self.channel: grpc.aio.Channel | None = None

    async def __aenter__(self) -> Harness:
        await self.ds.start()
        await self.model.start()
        self.server = ServeProcess(
            HAPI_DATA_STORAGE_URL=self.ds.url,
            HAPI_LLM_PROVIDER="openai",
            HAPI_LLM_BASE_URL=self.model.base_url,
            HAPI_LLM_MODEL="reliability-model",
            HAPI_LLM_API_KEY=API_KEY,
            **self._settings,
        )
        await self.server.start()
        # No receive limit on the client: oversized answers are measured, not refused.
        self.channel = grpc.aio.insecure_channel(
            self.server.address, options=[("grpc.max_receive_message_length", -1)]
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.channel is not None:
            await self.channel.close()
        if self.server is not None:
            await self.server.close()
        await self.model.kill()
        await self.ds.kill()

    @property
    def srv(self) -> ServeProcess:
        assert self.server is not None
        return self.server

    async def call(
        self, method: str, payload: bytes, timeout: float, cancel_after: float | None = None
    ) -> Outcome:
        assert self.channel is not None
        return await call(self.channel, method, payload, timeout, cancel_after)
