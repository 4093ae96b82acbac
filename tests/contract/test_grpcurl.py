"""The server as grpcurl and grpc_health_probe see it: reflection (with the
proto comments), JSON calls, a descriptor set instead of reflection, health,
and health during shutdown."""

from __future__ import annotations

import json
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hapi.v1 import service_pb2, service_pb2_grpc
from tests.contract.conftest import EXAMPLES, REPO, SERVICE, ServerProcess

pytestmark = pytest.mark.timeout(600)

PROTOS = REPO / "protos" / "hapi" / "v1"
OOMKILLED = EXAMPLES / "oomkilled.json"


# grpcurl prints a response field by the JSON name in the descriptor it got
# (lowerCamelCase from a descriptor set) or else by the proto field name, so
# responses are read by either; requests may use either form.


def pick(obj: dict[str, Any], name: str) -> Any:
    """obj[name] by proto field name or its lowerCamelCase JSON name."""
    camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)
    if name in obj:
        return obj[name]
    return obj[camel]


def has(obj: dict[str, Any], name: str) -> bool:
    try:
        pick(obj, name)
    except KeyError:
        return False
    return True


def run(
    args: list[str], *, stdin: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    if stdin is None:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    with stdin.open("rb") as f:
        raw = subprocess.run(args, stdin=f, capture_output=True, timeout=timeout, cwd=REPO)
    return subprocess.CompletedProcess(
        raw.args, raw.returncode, raw.stdout.decode(), raw.stderr.decode()
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (
        f"{' '.join(map(str, result.args))} exited {result.returncode}:\n"
        f"{result.stdout}\n{result.stderr}"
    )
    return result.stdout


def leading_comment(proto: Path, declaration: str) -> str:
    """First line of the comment above `declaration` (e.g. 'message Incident {')."""
    lines = proto.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(declaration))
    start = index
    while start > 0 and lines[start - 1].lstrip().startswith("//"):
        start -= 1
    assert start < index, f"no comment above {declaration!r} in {proto}"
    return lines[start].strip().removeprefix("//").strip()


@pytest.fixture(scope="module")
def grpcurl(go_tools: Path, hapi_server: ServerProcess) -> list[str]:
    return [str(go_tools / "grpcurl"), "-plaintext", "-max-time", "30"]


@pytest.fixture(scope="module")
def protoset() -> Path:
    """build/hapi.binpb, rebuilt from the current protos (imports and comments included)."""
    subprocess.run([str(REPO / "scripts" / "fetch_protos.sh")], check=True, timeout=300, cwd=REPO)
    out = REPO / "build" / "hapi.binpb"
    out.parent.mkdir(exist_ok=True)
    ok(
        run(
            [
                str(REPO / ".venv" / "bin" / "buf"),
                "build",
                "-o",
                str(out),
                "--path",
                "protos/hapi/v1",
            ]
        )
    )
    return out


def test_list_shows_the_services(grpcurl: list[str], hapi_server: ServerProcess) -> None:
    services = ok(run([*grpcurl, hapi_server.address, "list"])).split()
    assert SERVICE in services
    assert "grpc.health.v1.Health" in services
    methods = ok(run([*grpcurl, hapi_server.address, "list", SERVICE])).split()
    assert sorted(methods) == sorted(
        f"{SERVICE}.{m}"
        for m in (
            "AnalyzeIncident",
            "AnalyzeIncidentStream",
            "ValidateWorkflowParameters",
            "ReportRemediationOutcome",
        )
    )


def test_describe_shows_proto_comments(grpcurl: list[str], hapi_server: ServerProcess) -> None:
    service = ok(run([*grpcurl, hapi_server.address, "describe", SERVICE]))
    assert leading_comment(PROTOS / "service.proto", "service IncidentAnalysisService") in service
    assert leading_comment(PROTOS / "service.proto", "  rpc AnalyzeIncident(") in service
    assert "returns ( stream .hapi.v1.AnalyzeIncidentStreamResponse )" in service

    incident = ok(run([*grpcurl, hapi_server.address, "describe", "hapi.v1.Incident"]))
    assert leading_comment(PROTOS / "incident.proto", "message Incident {") in incident
    assert "string remediation_id = 1" in incident
    # protovalidate rules travel with the descriptors.
    assert "buf.validate.field" in incident


def test_analyze_incident_from_example(grpcurl: list[str], hapi_server: ServerProcess) -> None:
    out = ok(
        run(
            [*grpcurl, "-d", "@", hapi_server.address, f"{SERVICE}/AnalyzeIncident"],
            stdin=OOMKILLED,
        )
    )
    result = json.loads(out)["result"]
    incident = json.loads(OOMKILLED.read_text())["incident"]
    assert pick(result, "remediation_id") == incident["remediationId"]
    selected = pick(result, "selected_workflow")
    assert pick(selected, "workflow_id").startswith("oomkill-")
    assert selected["parameters"]["NAMESPACE"] == incident["signal"]["namespace"]
    if pick(selected, "workflow_id") == "oomkill-increase-memory-v1":
        assert re.fullmatch(r"[0-9]+(Ki|Mi|Gi|Ti)", selected["parameters"]["MEMORY_LIMIT_NEW"])
    assert not has(result, "needs_human_review") or not pick(result, "needs_human_review")


def test_invalid_example_is_invalid_argument(
    grpcurl: list[str], hapi_server: ServerProcess
) -> None:
    result = run(
        [*grpcurl, "-d", "@", hapi_server.address, f"{SERVICE}/AnalyzeIncident"],
        stdin=EXAMPLES / "invalid-empty-remediation-id.json",
    )
    assert result.returncode != 0
    assert "Code: InvalidArgument" in result.stderr, result.stderr
    assert "incident.remediation_id" in result.stderr, result.stderr


def test_validate_workflow_parameters(grpcurl: list[str], hapi_server: ServerProcess) -> None:
    method = f"{SERVICE}/ValidateWorkflowParameters"
    valid = {
        "workflowId": "oomkill-increase-memory-v1",
        "parameters": {
            "NAMESPACE": "payments",
            "DEPLOYMENT_NAME": "payment-api",
            "MEMORY_LIMIT_NEW": "1Gi",
        },
    }
    out = json.loads(ok(run([*grpcurl, "-d", json.dumps(valid), hapi_server.address, method])))
    assert pick(out, "workflow_id") == "oomkill-increase-memory-v1"
    assert out["validation"]["valid"] is True
    assert pick(out["validation"], "sanitized_parameters") == valid["parameters"]

    invalid = {**valid, "parameters": {**valid["parameters"], "MEMORY_LIMIT_NEW": "2 gigabytes"}}
    out = json.loads(ok(run([*grpcurl, "-d", json.dumps(invalid), hapi_server.address, method])))
    assert out["validation"].get("valid", False) is False
    assert {"parameter": "MEMORY_LIMIT_NEW", "code": "PARAMETER_ERROR_CODE_PATTERN_MISMATCH"} in [
        {"parameter": e["parameter"], "code": e["code"]} for e in out["validation"]["errors"]
    ]

    unknown = {"workflowId": "no-such-workflow-v1", "parameters": {}}
    result = run([*grpcurl, "-d", json.dumps(unknown), hapi_server.address, method])
    assert result.returncode != 0
    assert "Code: NotFound" in result.stderr, result.stderr


def test_protoset_instead_of_reflection(
    grpcurl: list[str], protoset: Path, hapi_server: ServerProcess
) -> None:
    with_protoset = [*grpcurl, "-protoset", str(protoset)]
    # Resolved from the file: works even for a service the server does not reflect.
    described = ok(run([*with_protoset, "describe", "hapi.v1.Incident"]))
    assert leading_comment(PROTOS / "incident.proto", "message Incident {") in described
    out = ok(
        run(
            [*with_protoset, "-d", "@", hapi_server.address, f"{SERVICE}/AnalyzeIncident"],
            stdin=OOMKILLED,
        )
    )
    assert pick(pick(json.loads(out)["result"], "selected_workflow"), "workflow_id")


def test_health_probe_serving(go_tools: Path, hapi_server: ServerProcess) -> None:
    probe = str(go_tools / "grpc_health_probe")
    for service in ("", SERVICE):
        result = run([probe, f"-addr={hapi_server.address}", f"-service={service}"])
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SERVING" in result.stdout + result.stderr
    result = run([probe, f"-addr={hapi_server.address}", "-service=no.such.Service"])
    assert result.returncode != 0


class HangingHTTPServer:
    """Accepts connections on 127.0.0.1 and never answers: a language model
    provider that keeps an investigation in flight."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            self.connected.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._conns:
            conn.close()
        self.sock.close()


@pytest.fixture
def hanging_llm() -> Iterator[HangingHTTPServer]:
    server = HangingHTTPServer()
    yield server
    server.close()


def test_health_probe_fails_once_shutdown_begins(
    go_tools: Path,
    start_server: Callable[[dict[str, str] | None], ServerProcess],
    hanging_llm: HangingHTTPServer,
) -> None:
    """SIGTERM with an investigation in flight: health flips to NOT_SERVING for
    watchers, a fresh probe fails while the server drains, the server exits 0."""
    probe = str(go_tools / "grpc_health_probe")
    server: ServerProcess = start_server(
        {
            "HAPI_LLM_PROVIDER": "openai",
            "HAPI_LLM_BASE_URL": f"http://127.0.0.1:{hanging_llm.port}/v1",
            "HAPI_LLM_MODEL": "hanging",
            "HAPI_LLM_API_KEY": "unused",
            "HAPI_LLM_MAX_RETRIES": "0",
        }
    )
    addr = f"-addr={server.address}"
    assert run([probe, addr, f"-service={SERVICE}"]).returncode == 0

    # An investigation stays in flight (its model call never answers), so the
    # server is still draining when the probe runs.
    request = service_pb2.AnalyzeIncidentStreamRequest()
    json_format.Parse(OOMKILLED.read_text(), request)
    channel = grpc.insecure_channel(server.address)
    stream = service_pb2_grpc.IncidentAnalysisServiceStub(channel).AnalyzeIncidentStream(
        request, timeout=30
    )
    outcome: list[object] = []

    def consume() -> None:
        try:
            outcome.append(list(stream))
        except grpc.RpcError as exc:
            outcome.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    # A Health.Watch opened before the shutdown sees the flip to NOT_SERVING.
    statuses: queue.Queue[int] = queue.Queue()
    watch = health_pb2_grpc.HealthStub(channel).Watch(
        health_pb2.HealthCheckRequest(service=SERVICE), timeout=30
    )

    def follow() -> None:
        try:
            for update in watch:
                statuses.put(int(update.status))
        except grpc.RpcError:
            pass

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    try:
        assert statuses.get(timeout=10) == health_pb2.HealthCheckResponse.SERVING
        assert hanging_llm.connected.wait(timeout=20), (
            f"the investigation never called the model:\n{server.log()}"
        )
        server.proc.send_signal(signal.SIGTERM)
        began = time.monotonic()
        assert statuses.get(timeout=5) == health_pb2.HealthCheckResponse.NOT_SERVING
        codes: list[int] = []
        while time.monotonic() - began < 10:
            result = run([probe, addr, f"-service={SERVICE}", "-connect-timeout=1s"], timeout=10)
            codes.append(result.returncode)
            if result.returncode != 0:
                break
            time.sleep(0.05)
        assert codes and codes[-1] != 0, f"probe kept passing after SIGTERM: {codes}"
        # The failure was seen while the server was still draining, not after it exited.
        assert server.proc.poll() is None, (
            f"server had already exited ({server.proc.returncode}) when the probe failed"
        )
        # 2 = connection failure, 3 = RPC failure, 4 = NOT_SERVING
        assert codes[-1] in (2, 3, 4), codes
        code = server.terminate()
        assert code == 0, f"exit code {code} after SIGTERM:\n{server.log()}"
        consumer.join(timeout=10)
        assert outcome, "the in-flight stream did not end when the server exited"
    finally:
        stream.cancel()
        watch.cancel()
        consumer.join(timeout=10)
        follower.join(timeout=10)
        channel.close()
    assert run([probe, addr, "-connect-timeout=1s"], timeout=10).returncode != 0


def test_report_remediation_outcome_from_example(
    grpcurl: list[str], hapi_server: ServerProcess
) -> None:
    method = f"{SERVICE}/ReportRemediationOutcome"
    report = json.loads((EXAMPLES / "outcome-failed.json").read_text())
    report["remediationId"] += f"-grpcurl-{time.monotonic_ns()}"
    first = json.loads(ok(run([*grpcurl, "-d", json.dumps(report), hapi_server.address, method])))
    assert not has(first, "already_recorded")
    again = json.loads(ok(run([*grpcurl, "-d", json.dumps(report), hapi_server.address, method])))
    assert pick(again, "already_recorded") is True
    assert pick(again, "recorded_at") == pick(first, "recorded_at")
    report["failed"]["reason"] = "OOMKilled"
    conflict = run([*grpcurl, "-d", json.dumps(report), hapi_server.address, method])
    assert "Code: AlreadyExists" in conflict.stderr, conflict.stderr


def test_recovery_example_does_not_get_the_failed_execution_back(
    grpcurl: list[str], hapi_server: ServerProcess
) -> None:
    example = EXAMPLES / "recovery-limitrange.json"
    out = ok(
        run([*grpcurl, "-d", "@", hapi_server.address, f"{SERVICE}/AnalyzeIncident"], stdin=example)
    )
    result = json.loads(out)["result"]
    failed = json.loads(example.read_text())["incident"]["recovery"]["previousExecutions"][0]
    if has(result, "selected_workflow"):
        selected = pick(result, "selected_workflow")
        assert (pick(selected, "workflow_id"), selected["parameters"]) != (
            failed["workflow"]["workflowId"],
            failed["workflow"]["parameters"],
        )
    else:
        assert pick(result, "needs_human_review") and has(result, "human_review_reason")
