"""The evaluation fixtures: Data Storage outages, a case's series in real Prometheus."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from evals.harness.cases import CASES_DIR
from evals.harness.fixtures import absolute_openmetrics, metrics_server, running_datastorage
from hapi_grpc.cases.case import DataStorageFault, load_case


def test_relative_sample_times_become_absolute() -> None:
    text = '# TYPE m gauge\nm{a="1"} 5 -600\nm{a="1"} 6 0\n'
    out = absolute_openmetrics(text, 1_000_000)
    assert out.splitlines() == [
        "# TYPE m gauge",
        'm{a="1"} 5 999400',
        'm{a="1"} 6 1000000',
        "# EOF",
    ]


async def test_an_outage_mid_investigation_fails_lookups_but_not_search() -> None:
    async with running_datastorage(None) as ds, aiohttp.ClientSession() as http:
        search = f"{ds.url}/api/v1/workflows/search"
        schema = f"{ds.url}/api/v1/workflows/oomkill-increase-memory-v1/schema"
        body = {"query": "OOMKilled", "filters": {"signal_type": "OOMKilled"}}
        ds.reset(DataStorageFault(endpoints=("schema", "workflow")))
        async with http.post(search, json=body) as resp:
            assert resp.status == 200
        async with http.get(schema) as resp:
            assert resp.status == 503
            assert resp.content_type == "application/problem+json"
        ds.reset(None)
        async with http.get(schema) as resp:
            assert resp.status == 200


@pytest.mark.slow
def test_a_case_series_is_served_by_prometheus(tmp_path: Path) -> None:
    case = load_case(CASES_DIR / "memory-alert-cause-is-oom-loop")
    with metrics_server(case, tmp_path) as url:
        query = urllib.parse.urlencode(
            {"query": "max_over_time(container_memory_working_set_bytes[1h])"}
        )
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as resp:
            result = json.load(resp)["data"]["result"]
    assert len(result) == 1 and result[0]["metric"]["namespace"] == "orders"
    # the sawtooth climbs toward the 256Mi limit before each kill
    assert 240 * 2**20 < float(result[0]["value"][1]) <= 256 * 2**20
