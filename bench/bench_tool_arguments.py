"""What recording one tool call costs: `ToolCallRecord` with typed arguments.

Run: python bench/bench_tool_arguments.py [--calls 20000]

Converts recorded calls of every typed tool to `hapi.v1.ToolCallRecord` the way
every response does (`converters.tool_call_to_proto`): once with arguments
seen before (the storm's case: the same calls across investigations) and once
with arguments never seen (each call new). Also times validating the same
arguments with each tool's argument model (the models generated from
tools.proto), which every call pays before it runs. Prints microseconds per
call and exits non-zero when any misses its target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hapi_grpc.domain.result import ToolCallRecord, ToolCallStatus  # noqa: E402
from hapi_grpc.toolsets.registry import TOOLSETS  # noqa: E402
from hapi_grpc.transport.converters import tool_call_to_proto  # noqa: E402

TARGET_SEEN_US = 60.0  # per call, arguments seen before
TARGET_NEW_US = 250.0  # per call, arguments never seen
TARGET_VALIDATE_US = 50.0  # per call, validating with the tool's model (5-28 on a busy host)

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_workflow_catalog", {"query": "OOMKilled critical", "limit": 5}),
    ("validate_workflow_parameters", {"workflow_id": "oom-1", "parameters": {"MEM": "1Gi"}}),
    ("kubernetes_get", {"kind": "Pod", "name": "api-1", "namespace": "payments"}),
    ("kubernetes_list", {"kind": "Pod", "namespace": "payments", "label_selector": "app=api"}),
    ("kubernetes_events", {"namespace": "payments", "kind": "Pod", "name": "api-1"}),
    ("kubernetes_pod_logs", {"namespace": "payments", "pod": "api-1", "previous": True}),
    ("kubernetes_owner_chain", {"namespace": "payments", "kind": "Pod", "name": "api-1"}),
    ("prometheus_query", {"query": "up"}),
    ("prometheus_query_range", {"query": "up", "range": "30m", "step": "60s"}),
    ("prometheus_label_values", {"label": "namespace", "match": ['{job="api"}']}),
    ("prometheus_series", {"match": ['{job="api"}']}),
    ("alertmanager_active_alerts", {"labels": {"namespace": "payments"}}),
]


def _record(name: str, arguments: dict[str, Any]) -> ToolCallRecord:
    return ToolCallRecord(
        name=name,
        arguments=arguments,
        raw_arguments="{}",
        result="ok",
        status=ToolCallStatus.SUCCESS,
        duration_seconds=0.01,
    )


def _per_call_us(records: list[ToolCallRecord]) -> float:
    started = time.perf_counter()
    for record in records:
        tool_call_to_proto(record)
    return (time.perf_counter() - started) / len(records) * 1e6


def _validate_us(calls: int) -> float:
    models = {
        tool: model
        for spec in TOOLSETS
        if spec.argument_models is not None
        for tool, model in spec.argument_models().items()
    }
    work = [(models[name], arguments) for name, arguments in CALLS]
    for model, arguments in work:
        model.model_validate(arguments)  # warm up; fails loudly on a bad example
    started = time.perf_counter()
    for i in range(calls):
        model, arguments = work[i % len(work)]
        model.model_validate(arguments)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    calls = parser.parse_args().calls
    seen = [_record(*CALLS[i % len(CALLS)]) for i in range(calls)]
    _per_call_us(seen[: len(CALLS)])  # warm the cache
    new = []
    for i in range(calls // 4):
        name, arguments = CALLS[i % len(CALLS)]
        new.append(_record(name, {**arguments, "namespace": f"ns-{i}"}))
    seen_us, new_us = _per_call_us(seen), _per_call_us(new)
    typed = sum(tool_call_to_proto(r).WhichOneof("arguments") is not None for r in seen[:12])
    print(f"typed tools recorded: {typed}/{len(CALLS)}")
    print(f"arguments seen before: {seen_us:.1f} us per call (target < {TARGET_SEEN_US})")
    print(f"arguments never seen:  {new_us:.1f} us per call (target < {TARGET_NEW_US})")
    validate_us = _validate_us(calls)
    print(f"argument validation:   {validate_us:.1f} us per call (target < {TARGET_VALIDATE_US})")
    ok = typed == len(CALLS) and seen_us < TARGET_SEEN_US and new_us < TARGET_NEW_US
    ok = ok and validate_us < TARGET_VALIDATE_US
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
