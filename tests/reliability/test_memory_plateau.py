"""Memory under sustained mixed traffic plateaus, against `hapi-grpc serve`.

The stores that keep something per call (kept results, recorded decisions,
history, caches) are scaled down to 1 MiB so that a short soak fills them;
after that, resident memory must stop rising. `bench/bench_soak_memory.py`
runs the same soak for minutes at the shipped bounds.
"""

from __future__ import annotations

import pytest

from tests.fakes.reliability import Harness
from tests.fakes.soak import soak

pytestmark = pytest.mark.slow

SCALED = {
    "HAPI_RESULT_MAX_BYTES": str(1 << 20),
    "HAPI_HISTORY_MAX_BYTES": str(1 << 20),
    "HAPI_HISTORY_MAX_DECISION_BYTES": str(1 << 20),
    "HAPI_CACHE_MAX_BYTES": str(1 << 20),  # the fake model's every search is new
}


@pytest.mark.timeout(240)
async def test_resident_memory_plateaus_once_every_store_is_full() -> None:
    async with Harness(**SCALED) as h:
        await soak(h, 20, concurrency=16, samples=4)  # imports, pools, stores filled
        result = await soak(h, 60, concurrency=16, samples=30)
    print("\n" + result.summary(), result.codes)
    assert result.calls > 3_000
    assert result.plateaued(), result.summary()
