"""Throughput of `validate_parameters` for a typical 8-parameter workflow schema.

Run: python bench/bench_validation.py [--seconds N]

Prints validations per second on one core (this process, one thread) for
valid inputs, invalid inputs and inputs carrying undeclared parameters, and
compares the valid-input figure with the 50,000/s target. Rates are given per
second of wall-clock time and per second of this process's CPU time; the
verdict uses CPU time, which other load on a shared machine does not distort.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, WorkflowSchema
from hapi_grpc.domain.parameters import validate_parameters

TARGET_PER_SECOND = 50_000

SCHEMA = WorkflowSchema(
    workflow_id="oomkill-increase-memory-v1",
    version="1.0.0",
    parameters=(
        ParameterSpec(
            name="MEMORY_LIMIT_NEW",
            type="string",
            required=True,
            pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)$",
            default="512Mi",
        ),
        ParameterSpec(
            name="TARGET_NAME",
            type="string",
            required=True,
            pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            min_length=1,
            max_length=63,
        ),
        ParameterSpec(name="NAMESPACE", type="string", required=True, max_length=63),
        ParameterSpec(name="REPLICA_COUNT", type="integer", minimum=1, maximum=50),
        ParameterSpec(name="TIMEOUT_SECONDS", type="integer", minimum=10, maximum=3600),
        ParameterSpec(name="RESTART_POLICY", type="string", enum=("Always", "OnFailure", "Never")),
        ParameterSpec(name="DRY_RUN", type="boolean", default=False),
        ParameterSpec(name="CPU_HEADROOM", type="float", minimum=0.0, maximum=1.0),
    ),
)

VALID = {
    "MEMORY_LIMIT_NEW": "2Gi",
    "TARGET_NAME": "api-server",
    "NAMESPACE": "production",
    "REPLICA_COUNT": 3.0,  # as it arrives through protobuf Struct
    "TIMEOUT_SECONDS": 300,
    "RESTART_POLICY": "Always",
    "DRY_RUN": False,
    "CPU_HEADROOM": 0.25,
}

INVALID = {
    "MEMORY_LIMIT_NEW": "2 gigabytes",
    "TARGET_NAME": "API_Server",
    "REPLICA_COUNT": 3.5,
    "TIMEOUT_SECONDS": 5,
    "RESTART_POLICY": "always",
    "DRY_RUN": "true",
    "CPU_HEADROOM": 1.5,
}

WITH_UNDECLARED = {**VALID, "GIT_PASSWORD": "hunter2", "GIT_USERNAME": "bot"}


def measure(params: Mapping[str, Any], seconds: float) -> tuple[float, float]:
    """(per wall-clock second, per CPU second) over about `seconds` of wall-clock time."""
    validate_parameters(SCHEMA, params)  # compile and warm the caches
    batch = 2_000
    done = 0
    gc.disable()  # collections would add noise unrelated to the validator
    try:
        start = time.perf_counter()
        cpu_start = time.process_time()
        deadline = start + seconds
        while True:
            for _ in range(batch):
                validate_parameters(SCHEMA, params, workflow_id="oomkill-increase-memory-v1")
            done += batch
            now = time.perf_counter()
            if now >= deadline:
                cpu = max(time.process_time() - cpu_start, 1e-9)
                return done / (now - start), done / cpu
    finally:
        gc.enable()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each case")
    args = parser.parse_args()
    # The stripped-parameters warning would otherwise measure the log handler.
    logging.getLogger("hapi_grpc.domain.parameters").setLevel(logging.ERROR)

    assert validate_parameters(SCHEMA, VALID).valid
    assert len(validate_parameters(SCHEMA, INVALID).errors) == 8

    cases = [
        ("valid (8 params)", VALID),
        ("invalid (8 errors)", INVALID),
        ("valid + 2 undeclared", WITH_UNDECLARED),
    ]
    results = {}
    print(f"{'case':<24} {'per wall s':>12} {'per CPU s':>12} {'us (CPU) each':>14}")
    for label, params in cases:
        wall_rate, cpu_rate = measure(params, args.seconds)
        results[label] = cpu_rate
        print(f"{label:<24} {wall_rate:>12,.0f} {cpu_rate:>12,.0f} {1e6 / cpu_rate:>14.2f}")
    rate = results["valid (8 params)"]
    verdict = "PASS" if rate >= TARGET_PER_SECOND else "BELOW"
    print(
        f"target {TARGET_PER_SECOND:,} validations/s on one core (valid inputs):"
        f" {rate:,.0f}/s {verdict}"
    )
    return 0 if rate >= TARGET_PER_SECOND else 1


if __name__ == "__main__":
    sys.exit(main())
