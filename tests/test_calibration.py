"""`hapi-grpc calibration` from a running server's /metrics and from a history
export taken from the shared Redis store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.history.redis_store import RedisHistoryBackend
from hapi_grpc.application.outcomes import OutcomeService, confidence_bucket
from hapi_grpc.cli import main
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.domain.execution import ExecutedWorkflow
from hapi_grpc.domain.history import Decision, Outcome, OutcomeReport
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.observability.metrics_server import start_metrics_server
from tests.fakes.redis_server import running_redis

TARGET = TargetResource("payments", "Deployment", "payment-api")


def decision(rid: str, confidence: float, automated: bool = True) -> Decision:
    return Decision(rid, TARGET, "OOMKilled", "", "wf", "1", confidence, automated, 0.0)


async def decide_and_report(service: OutcomeService, history: EmbeddedHistory) -> None:
    cases = [
        ("rr-c1", 0.95, True, Outcome.SUCCESS),
        ("rr-c2", 0.93, True, Outcome.FAILED),
        ("rr-c3", 0.91, True, Outcome.SUCCESS),
        ("rr-c4", 0.72, True, Outcome.FAILED),
        ("rr-c5", 0.55, False, Outcome.SUCCESS),  # reviewed: not the decider's calibration
        ("rr-c6", 0.85, True, Outcome.ESCALATED),  # declined: nothing executed
    ]
    for rid, confidence, automated, outcome in cases:
        await history.record_decision(decision(rid, confidence, automated))
        workflow = None if outcome is Outcome.ESCALATED else "wf"
        await service.report(
            OutcomeReport(
                rid, 1, TARGET, outcome, ExecutedWorkflow(workflow) if workflow else None
            ),
            Budget.from_timeout(5),
        )


def test_confidence_buckets() -> None:
    assert [confidence_bucket(c) for c in (0.0, 0.49, 0.5, 0.89, 0.9, 1.0)] == [
        "0.0-0.5", "0.0-0.5", "0.5-0.6", "0.8-0.9", "0.9-1.0", "0.9-1.0",
    ]  # fmt: skip


async def test_the_table_from_a_history_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_redis(tmp_path) as redis:
        history = EmbeddedHistory(RedisHistoryBackend(redis.url))
        try:
            await decide_and_report(OutcomeService(history), history)
        finally:
            await history.close()
        client = aioredis.from_url(redis.url)
        try:
            keys = [k async for k in client.scan_iter(match="hapi:history:outcome:*")]
            values = await client.mget(keys)
        finally:
            await client.aclose()
    export = tmp_path / "history.jsonl"
    export.write_bytes(b"\n".join(values) + b"\n")
    assert main(["calibration", "--history-file", str(export), "--json"]) == 0
    rows = {r["confidence"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows == {
        "0.9-1.0": {"confidence": "0.9-1.0", "executed": 3, "succeeded": 2, "failed": 1,
                    "success_rate": 0.667},
        "0.7-0.8": {"confidence": "0.7-0.8", "executed": 1, "succeeded": 0, "failed": 1,
                    "success_rate": 0.0},
    }  # fmt: skip
    assert main(["calibration", "--history-file", str(export)]) == 0
    text = capsys.readouterr().out
    assert "0.9-1.0" in text and "67%" in text


async def test_the_table_from_a_running_servers_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runner, port = await start_metrics_server("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/metrics"
    try:

        def table() -> dict[str, dict[str, int]]:
            assert main(["calibration", "--metrics-url", url, "--json"]) == 0
            return {r["confidence"]: r for r in json.loads(capsys.readouterr().out)}

        before = await asyncio.to_thread(table)
        history = EmbeddedHistory(MemoryHistoryBackend())
        await decide_and_report(OutcomeService(history), history)
        after = await asyncio.to_thread(table)
    finally:
        await runner.cleanup()

    def count(rows: dict[str, dict[str, int]], bucket: str, key: str) -> int:
        return rows.get(bucket, {}).get(key, 0)

    assert count(after, "0.9-1.0", "succeeded") - count(before, "0.9-1.0", "succeeded") == 2
    assert count(after, "0.9-1.0", "failed") - count(before, "0.9-1.0", "failed") == 1
    assert count(after, "0.7-0.8", "failed") - count(before, "0.7-0.8", "failed") == 1
    assert count(after, "0.5-0.6", "succeeded") == count(before, "0.5-0.6", "succeeded")
    assert count(after, "0.8-0.9", "executed") == count(before, "0.8-0.9", "executed")


def test_an_unreachable_server_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["calibration", "--metrics-url", "http://127.0.0.1:9/metrics", "--timeout", "1"]) == 1
    )
    assert "hapi-grpc calibration:" in capsys.readouterr().err
