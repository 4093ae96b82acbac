"""Real Prometheus and Alertmanager for the metrics tests, one of each per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.alertmanager_server import AlertmanagerServer, running_alertmanager
from tests.fakes.prometheus_server import PrometheusServer, running_prometheus


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: Any) -> Iterator[PrometheusServer]:
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        pytest.skip("prometheus/promtool not installed (scripts/ensure_prometheus.sh)")
    with running_prometheus(tmp_path_factory.mktemp("prometheus")) as server:
        yield server


@pytest.fixture(scope="session")
def alertmanager(tmp_path_factory: Any) -> Iterator[AlertmanagerServer]:
    if shutil.which("prometheus-alertmanager") is None and shutil.which("alertmanager") is None:
        pytest.skip("alertmanager not installed (scripts/ensure_prometheus.sh)")
    with running_alertmanager(tmp_path_factory.mktemp("alertmanager")) as server:
        yield server
