"""The built image, run as its users run it: the entrypoint as the image's
numeric user on a read-only root filesystem, probed through real channels.

Needs the image `make image` builds (localhost/hapi-grpc:<version>, or
HAPI_IMAGE); `make test` builds it first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import struct_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from hapi.v1 import analysis_pb2, service_pb2_grpc, validation_pb2
from hapi_grpc.client import load_analyze_request
from tests.fakes.serve_process import free_port
from tests.image.conftest import MEASURED
from tests.image.running_image import RunningImage, tree_size

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "hapi.v1.IncidentAnalysisService"
IMAGE_USER = 10001
# Unpacked root filesystem. First measured at 344 MB (Debian bookworm
# python3 + pip base, 198 MB by buildah's count, plus the installed wheels),
# 523 MB once the CEL runtime (~50 MB) and the Kubernetes client (~126 MB, for
# its quantity parser) joined; the budget leaves ~10 % for dependency updates
# before someone has to look.
SIZE_BUDGET_MB = 575
START_TIMEOUT = 120.0

pytestmark = pytest.mark.timeout(600)


def image_ref() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return os.environ.get("HAPI_IMAGE") or f"localhost/hapi-grpc:{project['project']['version']}"


def deployment_settings(grpc_port: int, metrics_port: int) -> dict[str, str]:
    """The settings ConfigMap as deploy/ ships it, on free loopback ports."""
    shipped = yaml.safe_load((ROOT / "deploy" / "configmap.yaml").read_text(encoding="utf-8"))
    return {
        **shipped["data"],
        "HAPI_GRPC_HOST": "127.0.0.1",
        "HAPI_GRPC_PORT": str(grpc_port),
        "HAPI_METRICS_HOST": "127.0.0.1",
        "HAPI_METRICS_PORT": str(metrics_port),
        "HAPI_SHUTDOWN_DELAY_SECONDS": "0",
        "HAPI_SHUTDOWN_GRACE_SECONDS": "5",
        # No API server here to check callers' tokens against; the
        # authentication modes have tests of their own.
        "HAPI_AUTH_MODE": "none",
    }


def wait_serving(image: RunningImage, address: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:  # bounded by START_TIMEOUT
            if image.exited() is not None:
                raise RuntimeError(f"the image's entrypoint exited:\n{image.log()}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"not SERVING within {START_TIMEOUT:.0f} s:\n{image.log()}")


class Started:
    def __init__(self, image: RunningImage, grpc_port: int, metrics_port: int) -> None:
        self.image = image
        self.address = f"127.0.0.1:{grpc_port}"
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"


@pytest.fixture(scope="module")
def started() -> Iterator[Started]:
    workdir = Path(tempfile.mkdtemp(prefix="hapi-image-"))
    catalog = workdir / "catalog"
    catalog.mkdir()
    shutil.copy(ROOT / "deploy" / "catalog.yaml", catalog / "catalog.yaml")
    grpc_port, metrics_port = free_port(), free_port()
    image = RunningImage(image_ref(), catalog, deployment_settings(grpc_port, metrics_port))
    try:
        image.start(workdir / "server.log")
        wait_serving(image, f"127.0.0.1:{grpc_port}")
        yield Started(image, grpc_port, metrics_port)
    finally:
        image.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_entrypoint_runs_as_the_images_numeric_non_root_user(started: Started) -> None:
    process = started.image.entrypoint_process()
    assert process.cmdline()[-1] == "serve", process.cmdline()
    uids, gids = process.uids(), process.gids()
    assert (uids.real, uids.effective, uids.saved) == (IMAGE_USER,) * 3
    assert (gids.real, gids.effective) == (IMAGE_USER,) * 2
    user = str(started.image.config.get("User") or "")
    assert user.split(":")[0].isdigit(), f"USER {user!r}: numeric, so runAsNonRoot can check it"


def test_root_filesystem_is_read_only(started: Started) -> None:
    process = started.image.entrypoint_process()
    mounts = Path(f"/proc/{process.pid}/mountinfo").read_text().splitlines()
    # Fields: id parent major:minor root mount-point options ... (proc(5)).
    root_options = [line.split()[5] for line in mounts if line.split()[4] == "/"]
    assert root_options and "ro" in root_options[-1].split(","), root_options


def test_health_checks_answer_serving(started: Started) -> None:
    with grpc.insecure_channel(started.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, service


def test_analyze_incident_on_an_example(started: Started) -> None:
    request = load_analyze_request(ROOT / "examples" / "oomkilled.json")
    with grpc.insecure_channel(started.address) as channel:
        reply = service_pb2_grpc.IncidentAnalysisServiceStub(channel).AnalyzeIncident(
            request, timeout=60
        )
    result = reply.result
    assert result.remediation_id == request.incident.remediation_id
    # No cluster is attached: nothing read confirms a state-changing workflow's
    # premise, so the candidate comes back for review with the condition named.
    assert result.needs_human_review
    assert result.human_review_reason == analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET
    assert "oomkill-increase-memory-v1" in [a.workflow_id for a in result.alternative_workflows]
    assert any("container_oomkilled" in w for w in result.warnings)


def test_validate_workflow_parameters(started: Started) -> None:
    def validate(**parameters: object) -> validation_pb2.ParameterValidation:
        values = struct_pb2.Struct()
        values.update(parameters)
        request = validation_pb2.ValidateWorkflowParametersRequest(
            workflow_id="oomkill-increase-memory-v1", parameters=values
        )
        with grpc.insecure_channel(started.address) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            return stub.ValidateWorkflowParameters(request, timeout=30).validation

    good = validate(NAMESPACE="production", DEPLOYMENT_NAME="api", MEMORY_LIMIT_NEW="2Gi")
    assert good.valid and not good.errors
    bad = validate(NAMESPACE="production", DEPLOYMENT_NAME="api", MEMORY_LIMIT_NEW="2 gigabytes")
    assert not bad.valid
    assert [e.parameter for e in bad.errors] == ["MEMORY_LIMIT_NEW"]

    with pytest.raises(grpc.RpcError) as refused:
        validate_unknown = validation_pb2.ValidateWorkflowParametersRequest(
            workflow_id="../admin", parameters=struct_pb2.Struct()
        )
        with grpc.insecure_channel(started.address) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            stub.ValidateWorkflowParameters(validate_unknown, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_metrics_endpoint_counts_the_calls(started: Started) -> None:
    # Runs after the calls above (file order): they are counted.
    with urllib.request.urlopen(started.metrics_url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    handled = {
        (sample.labels["method"], sample.labels["code"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hapi_grpc_server_handled_total"
    }
    assert handled[("AnalyzeIncident", "OK")] >= 1
    assert handled[("ValidateWorkflowParameters", "OK")] >= 2
    assert handled[("ValidateWorkflowParameters", "INVALID_ARGUMENT")] >= 1


def test_image_size_within_budget(started: Started) -> None:
    size = tree_size(started.image.rootfs)
    MEASURED["image size"] = f"{size / 1e6:.0f} MB unpacked (budget {SIZE_BUDGET_MB} MB)"
    assert size <= SIZE_BUDGET_MB * 1e6, f"{size / 1e6:.0f} MB > budget {SIZE_BUDGET_MB} MB"


def test_image_holds_this_checkouts_code(started: Started) -> None:
    # A stale image (a builder reusing an old install step) would pass the
    # probes above with old code.
    (installed,) = [
        p
        for pattern in (
            "usr/local/lib/python3*/*-packages/hapi_grpc",
            "usr/lib/python3*/*-packages/hapi_grpc",
        )
        for p in started.image.rootfs.glob(pattern)
    ]
    source = ROOT / "hapi_grpc"
    differ = [
        str(path.relative_to(source))
        for path in sorted(source.rglob("*.py"))
        if not (installed / path.relative_to(source)).is_file()
        or (installed / path.relative_to(source)).read_bytes() != path.read_bytes()
    ]
    assert not differ, f"the image's hapi_grpc differs from this checkout: {differ[:10]}"
