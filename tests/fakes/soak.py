"""A soak of mixed traffic against `hapi-grpc serve`, and whether its memory plateaus.

Shared by `bench/bench_soak_memory.py` (minutes) and
`tests/reliability/test_memory_plateau.py` (seconds). Workers send what
callers send, each call with fresh ids so that every store that keeps
something per call (kept results, decisions, history, caches) is filled:
analyses and streams, validations, hostile payloads, analyses cancelled
mid-flight, and outcome reports (some joining an analysis, some at their
byte bounds). The server's RSS is sampled as calls complete.

The verdict compares the second half of the run with the first: once every
store has reached its bound, resident memory stops rising. `growth_per_call`
of the second half must be a small share of the first half's (the stores
filling up) or, when the first half grew little, below a noise floor.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from dataclasses import dataclass, field

import grpc
from google.protobuf import json_format

from hapi.v1 import outcome_pb2
from tests.fakes import reliability_cases as cases
from tests.fakes.reliability import Harness

__all__ = ["REPORT", "Sample", "SoakResult", "soak"]

REPORT = "/hapi.v1.IncidentAnalysisService/ReportRemediationOutcome"
MiB = 1024 * 1024
# Per call, the second half may grow by at most this share of what the first
# half grew per call, or by NOISE_BYTES in all (the allocator's own drift).
PLATEAU_RATIO = 0.1
NOISE_BYTES = 6 * MiB
# Parameters at a report's byte bound: 55 values of 280 characters (16,000 bytes).
_LARGE = {f"P{i:02d}": "x" * 280 for i in range(55)}


@dataclass(frozen=True)
class Sample:
    calls: int
    rss: int  # bytes


@dataclass
class SoakResult:
    samples: list[Sample] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return self.samples[-1].calls if self.samples else 0

    def halves(self) -> tuple[float, float, int]:
        """Growth per call in the first half, in the second, and the second's growth."""
        first, middle, last = (
            self.samples[0],
            self.samples[len(self.samples) // 2],
            self.samples[-1],
        )
        per_first = (middle.rss - first.rss) / max(middle.calls - first.calls, 1)
        per_second = (last.rss - middle.rss) / max(last.calls - middle.calls, 1)
        return per_first, per_second, last.rss - middle.rss

    def plateaued(self) -> bool:
        per_first, per_second, grew = self.halves()
        return grew <= NOISE_BYTES or per_second <= PLATEAU_RATIO * max(per_first, 0.0)

    def summary(self) -> str:
        per_first, per_second, grew = self.halves()
        start, end = self.samples[0].rss / MiB, self.samples[-1].rss / MiB
        peak = max(s.rss for s in self.samples) / MiB
        return (
            f"{self.calls} calls; RSS {start:.0f} -> {end:.0f} MiB (peak {peak:.0f});"
            f" growth per call: first half {per_first:.0f} B, second half {per_second:.0f} B"
            f" ({grew / MiB:+.1f} MiB); plateau: second half <= {PLATEAU_RATIO:g} x first"
            f" or <= {NOISE_BYTES // MiB} MiB -> {'yes' if self.plateaued() else 'NO'}"
        )


def _report(remediation_id: str, rng: random.Random) -> bytes:
    body = {
        "remediationId": remediation_id,
        "attempt": 1,
        "target": {"namespace": "payments", "kind": "Deployment", "name": "payment-api"},
        "executed": {
            "workflowId": "oomkill-increase-memory-v1",
            "parameters": _LARGE if rng.random() < 0.2 else dict(cases.GOOD_PARAMETERS),
        },
    }
    if rng.random() < 0.3:
        body["failed"] = {"reason": "OOMKilled", "message": "the new limit was hit again"}
    else:
        body["succeeded"] = {}
    request = json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())
    return request.SerializeToString()


async def soak(
    h: Harness,
    seconds: float,
    *,
    concurrency: int = 16,
    samples: int = 40,
    seed: int = 11,
) -> SoakResult:
    """`seconds` of mixed traffic from `concurrency` workers; RSS sampled `samples` times."""
    rng = random.Random(seed)
    result = SoakResult()
    analysed: deque[str] = deque(maxlen=256)  # ids a report may join
    calls = 0
    end = time.monotonic() + seconds
    timeout = 15.0

    def count(code: grpc.StatusCode) -> None:
        nonlocal calls
        calls += 1
        result.codes[code.name] = result.codes.get(code.name, 0) + 1

    async def worker() -> None:
        while time.monotonic() < end:  # bounded by the soak's duration
            pick = rng.random()
            if pick < 0.35:
                incident = cases.incident()
                analysed.append(incident.remediation_id)
                outcome = await h.call(cases.ANALYZE, cases.analyze(incident), timeout)
            elif pick < 0.45:
                outcome = await h.call(cases.STREAM, cases.analyze_stream(), timeout)
            elif pick < 0.60:
                outcome = await h.call(cases.VALIDATE, cases.validate(), timeout)
            elif pick < 0.75:
                method = rng.choice(cases.METHODS)
                _, payload = next(cases.hostile_payloads(method, rng, 1))
                outcome = await h.call(method, payload, timeout)
            elif pick < 0.85:
                cancel = rng.random() * 0.05
                outcome = await h.call(cases.ANALYZE, cases.analyze(), timeout, cancel)
            else:
                rid = analysed.popleft() if analysed and rng.random() < 0.5 else cases.fresh_id()
                outcome = await h.call(REPORT, _report(rid, rng), timeout)
            count(outcome.code)

    async def sampler() -> None:
        every = seconds / samples
        while True:  # cancelled once the workers are done
            result.samples.append(Sample(calls, h.srv.rss()))
            await asyncio.sleep(every)

    sampling = asyncio.ensure_future(sampler())
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        sampling.cancel()
    result.samples.append(Sample(calls, h.srv.rss()))
    return result
