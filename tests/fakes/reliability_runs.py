"""The categories of the reliability suite, each recording into a `Report`.

`run_all` runs them in an order that keeps the Data Storage circuit breaker
honest: many healthy calls first, so that the dependency faults are really
delivered to the server instead of being short-circuited, then the soak, then
the checks of the server's state after the run. `run_sigterm` uses a server
of its own because it ends it.
"""

from __future__ import annotations

import asyncio
import random
import time

from hapi_grpc.config import Settings
from tests.fakes import hostile_payloads
from tests.fakes import reliability_cases as cases
from tests.fakes.faults import FAULTS, Fault, FaultyDataStorage, FaultyModel
from tests.fakes.reliability import (
    API_KEY,
    FD_GROWTH_BOUND,
    MAX_RESPONSE_BYTES,
    RSS_GROWTH_BOUND,
    TRACEBACK,
    C,
    Category,
    Harness,
    MiB,
    Outcome,
    Report,
    Sizes,
    bounded_gather,
    dependency_rule,
    in_time,
    scrape_in_flight,
    selected_cleanly,
)

INPUT_TIMEOUT = 20.0


def _input_rule(outcome: Outcome, allowed: frozenset[C], timeout: float) -> tuple[bool, str]:
    if outcome.code not in allowed:
        return False, f"answered {outcome.describe()}, allowed {sorted(c.name for c in allowed)}"
    if outcome.size > MAX_RESPONSE_BYTES:
        return False, f"response of {outcome.size} bytes (bound {MAX_RESPONSE_BYTES})"
    if not in_time(outcome, timeout):
        return False, f"ended {outcome.elapsed:.2f}s after a {timeout:g}s deadline"
    return True, ""


async def warm_up(h: Harness, report: Report) -> None:
    category = report.category("warm-up: valid calls")
    for method in (cases.ANALYZE, cases.STREAM, cases.VALIDATE, cases.ANALYZE):
        outcome = await h.call(method, cases.valid_request(method), INPUT_TIMEOUT)
        good = selected_cleanly(outcome) if method != cases.VALIDATE else outcome.code == C.OK
        category.check(good, f"{method.rsplit('/', 1)[1]}: {outcome.describe()}", outcome)


async def boundary(h: Harness, report: Report) -> None:
    category = report.category("boundary messages")

    async def one(case: cases.Case) -> None:
        outcome = await h.call(case.method, case.payload, INPUT_TIMEOUT)
        ok, why = _input_rule(outcome, case.allowed, INPUT_TIMEOUT)
        category.check(ok, f"{case.name}: {why}", outcome)

    await bounded_gather(8, [lambda c=c: one(c) for c in cases.boundary_cases()])


async def payloads(h: Harness, report: Report, sizes: Sizes) -> None:
    rng = random.Random(sizes.seed)

    async def one(method: str, kind: str, payload: bytes) -> None:
        outcome = await h.call(method, payload, INPUT_TIMEOUT)
        ok, why = _input_rule(outcome, cases.INPUT_CODES, INPUT_TIMEOUT)
        name = method.rsplit("/", 1)[1]
        report.category(f"random/mutated: {name}").check(ok, f"{kind}: {why}", outcome)

    jobs = [
        lambda m=method, k=kind, p=payload: one(m, k, p)
        for method in cases.METHODS
        for kind, payload in cases.hostile_payloads(method, rng, sizes.payloads_per_method)
    ]
    jobs += [
        lambda m=method, i=index, p=payload: one(m, f"crafted #{i}", p)
        for method in cases.METHODS
        for index, payload in enumerate(hostile_payloads.crafted(method))
    ]
    await bounded_gather(16, jobs)


async def cancellation(h: Harness, report: Report, sizes: Sizes) -> None:
    """N concurrent investigations, every other one cancelled by its caller mid-flight."""
    category = report.category(f"{sizes.cancel_calls} concurrent, half cancelled")
    rng = random.Random(sizes.seed)
    h.model.turn_delay = sizes.cancel_turn_delay
    timeout = 30.0
    try:

        async def one(index: int) -> None:
            method = cases.STREAM if index % 4 == 1 else cases.ANALYZE
            cancel = rng.uniform(0.05, 3 * sizes.cancel_turn_delay) if index % 2 else None
            outcome = await h.call(method, cases.valid_request(method), timeout, cancel)
            if cancel is None:
                ok = (
                    outcome.code == C.OK
                    and outcome.result is not None
                    and in_time(outcome, timeout)
                )
                category.check(ok, f"uncancelled call answered {outcome.describe()}", outcome)
            else:
                category.check(
                    outcome.code == C.CANCELLED, f"cancelled call: {outcome.describe()}", outcome
                )

        await asyncio.gather(*(one(i) for i in range(sizes.cancel_calls)))
    finally:
        h.model.turn_delay = 0.0
    category.check(
        await h.model.wait_idle(5.0),
        f"model requests still open 5s after the callers left: {h.model.open_requests}",
    )
    in_flight = None
    for _ in range(50):  # up to 5 s for the server to notice the last cancellations
        in_flight = await scrape_in_flight(h.srv.metrics_url)
        if in_flight == 0:
            break
        await asyncio.sleep(0.1)
    category.check(in_flight == 0, f"hapi_grpc_server_in_flight is {in_flight} after the burst")


async def dependency_faults(h: Harness, report: Report, sizes: Sizes) -> None:
    deps: list[tuple[str, FaultyDataStorage | FaultyModel]] = [
        ("Data Storage", h.ds),
        ("model", h.model),
    ]
    for label, dep in deps:
        category = report.category(f"dependency faults: {label}")
        # Kill and restart mid-run: calls may also succeed once it is back.
        dep.turn_delay = 0.5
        try:
            calls = asyncio.ensure_future(_fault_batch(h, category, sizes, "kill+restart", True))
            await asyncio.sleep(0.6)
            await dep.kill()
            await asyncio.sleep(1.0)
            await dep.restart()
            await calls
        finally:
            dep.turn_delay = 0.0
        for fault in FAULTS:
            dep.fault = fault
            try:
                await _fault_batch(h, category, sizes, fault.value, False)
            finally:
                dep.fault = Fault.OK
            category.check(
                await dep.wait_idle(3.0),
                f"{fault.value}: {dep.open_requests} {label} requests still open 3s after"
                " every caller had its answer",
            )


async def _fault_batch(
    h: Harness, category: Category, sizes: Sizes, fault: str, recovered_ok: bool
) -> None:
    deadline = sizes.fault_deadline

    async def one(index: int) -> None:
        method = cases.STREAM if index % 2 else cases.ANALYZE
        outcome = await h.call(method, cases.valid_request(method), deadline)
        ok = dependency_rule(outcome, recovered_ok=recovered_ok) and in_time(outcome, deadline)
        category.check(ok, f"{fault}: {outcome.describe()} after {outcome.elapsed:.2f}s", outcome)

    await asyncio.gather(*(one(i) for i in range(sizes.fault_calls)))


async def soak(h: Harness, report: Report, sizes: Sizes) -> None:
    category = report.category(f"soak ({sizes.soak_seconds:g}s mixed traffic)")
    rng = random.Random(sizes.seed + 1)
    end = time.monotonic() + sizes.soak_seconds
    timeout = 15.0

    async def worker() -> None:
        while time.monotonic() < end:  # bounded by the soak duration
            pick = rng.random()
            if pick < 0.45:
                outcome = await h.call(cases.ANALYZE, cases.analyze(), timeout)
                category.check(
                    selected_cleanly(outcome), f"valid analyze: {outcome.describe()}", outcome
                )
            elif pick < 0.55:
                outcome = await h.call(cases.STREAM, cases.analyze_stream(), timeout)
                category.check(
                    selected_cleanly(outcome), f"valid stream: {outcome.describe()}", outcome
                )
            elif pick < 0.70:
                outcome = await h.call(cases.VALIDATE, cases.validate(), timeout)
                category.check(
                    outcome.code == C.OK, f"valid validate: {outcome.describe()}", outcome
                )
            elif pick < 0.90:
                method = rng.choice(cases.METHODS)
                kind, payload = next(cases.hostile_payloads(method, rng, 1))
                outcome = await h.call(method, payload, timeout)
                good = outcome.code in cases.INPUT_CODES
                category.check(good, f"{kind} payload: {outcome.describe()}", outcome)
            else:
                outcome = await h.call(cases.ANALYZE, cases.analyze(), timeout, rng.random() * 0.05)
                good = outcome.code in (C.CANCELLED, C.OK)
                category.check(good, f"cancelled analyze: {outcome.describe()}", outcome)

    await asyncio.gather(*(worker() for _ in range(sizes.soak_concurrency)))


def sample_start(h: Harness, report: Report) -> None:
    report.resources["RSS (MiB)"] = {"start": h.srv.rss() / MiB, "peak": h.srv.rss() / MiB}
    report.resources["open fds"] = {"start": h.srv.fds(), "peak": h.srv.fds()}


async def sample_peaks(h: Harness, report: Report) -> None:
    while True:  # cancelled by run_all
        report.resources["RSS (MiB)"]["peak"] = max(
            report.resources["RSS (MiB)"]["peak"], h.srv.rss() / MiB
        )
        report.resources["open fds"]["peak"] = max(
            report.resources["open fds"]["peak"], h.srv.fds()
        )
        await asyncio.sleep(0.25)


async def after_the_run(h: Harness, report: Report) -> None:
    category = report.category("after the run")
    # An open Data Storage breaker closes after its recovery time; allow for it.
    wait = Settings().breaker_recovery_seconds + 10
    end = time.monotonic() + wait
    outcome = None
    while time.monotonic() < end:
        outcome = await h.call(cases.ANALYZE, cases.analyze(), INPUT_TIMEOUT)
        if selected_cleanly(outcome):
            break
        await asyncio.sleep(1.0)
    assert outcome is not None
    category.check(
        selected_cleanly(outcome), f"valid analyze within {wait:g}s: {outcome.describe()}"
    )
    outcome = await h.call(cases.VALIDATE, cases.validate(), INPUT_TIMEOUT)
    category.check(outcome.code == C.OK, f"valid validate: {outcome.describe()}")

    rss, fds = report.resources["RSS (MiB)"], report.resources["open fds"]
    # Idle keep-alive connections to the dependencies close 30-60 s after their
    # last use (measured); fds that stay open beyond that are a leak.
    for _ in range(120):
        if h.srv.fds() <= fds["start"] + FD_GROWTH_BOUND:
            break
        await asyncio.sleep(0.5)
    rss["end"], fds["end"] = h.srv.rss() / MiB, h.srv.fds()
    rss["bound_text"] = f"end <= start + {RSS_GROWTH_BOUND // MiB} MiB"  # type: ignore[assignment]
    fds["bound_text"] = f"end <= start + {FD_GROWTH_BOUND}"  # type: ignore[assignment]
    grew = rss["end"] - rss["start"]
    category.check(grew <= RSS_GROWTH_BOUND / MiB, f"RSS grew by {grew:.0f} MiB")
    category.check(
        fds["end"] - fds["start"] <= FD_GROWTH_BOUND,
        f"open fds grew by {fds['end'] - fds['start']:.0f}",
    )
    check_log(h.srv.log(), category)
    category.check(
        not h.model.bad_requests, f"model API refused requests: {h.model.bad_requests[:3]}"
    )
    category.check(
        h.model.unauthorized == 0, f"{h.model.unauthorized} model requests without the key"
    )


def check_log(log: str, category: Category) -> None:
    tracebacks = log.count(TRACEBACK)
    first = ""
    if tracebacks:
        at = log.index(TRACEBACK)
        first = log[max(0, at - 300) : at + 700].replace("\n", " | ")
    category.check(tracebacks == 0, f"{tracebacks} tracebacks in the server log; first: {first}")
    category.check(API_KEY not in log, "the model API key appears in the server log")


async def run_all(report: Report, sizes: Sizes) -> None:
    async with Harness() as h:
        await warm_up(h, report)
        sample_start(h, report)
        sampler = asyncio.ensure_future(sample_peaks(h, report))
        try:
            await boundary(h, report)
            await payloads(h, report, sizes)
            await cancellation(h, report, sizes)
            await dependency_faults(h, report, sizes)
            await soak(h, report, sizes)
        finally:
            sampler.cancel()
        await after_the_run(h, report)


async def run_sigterm(report: Report, sizes: Sizes) -> None:
    """N investigations against a slow model; SIGTERM (shipped grace) once half reached it.

    The other half are still arriving while the server shuts down, as under real load.
    """
    category = report.category(f"SIGTERM under load ({sizes.sigterm_calls} calls)")
    grace = Settings().shutdown_grace_seconds
    async with Harness() as h:
        h.model.turn_delay = sizes.sigterm_turn_seconds
        calls = [
            asyncio.ensure_future(h.call(cases.ANALYZE, cases.analyze(), grace + 60))
            for _ in range(sizes.sigterm_calls)
        ]
        await h.model.wait_conversations(sizes.sigterm_calls // 2, 30.0)
        code, seconds = await h.srv.terminate(grace + 15)
        for outcome in await asyncio.gather(*calls):
            good = outcome.code == C.UNAVAILABLE or (
                outcome.code == C.OK and outcome.result is not None
            )
            category.check(good, f"call answered {outcome.describe()}", outcome)
        category.check(
            code == 0, f"exit code {code} (None: still running {seconds:.1f}s after SIGTERM)"
        )
        category.check(
            seconds <= grace + 5, f"exited {seconds:.1f}s after SIGTERM (grace {grace:g}s + 5s)"
        )
        check_log(h.srv.log(), category)
