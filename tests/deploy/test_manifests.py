"""Kubernetes manifests and Dockerfile: offline schema validation and the
properties an operator relies on (the Pod, its settings, shutdown, the image).
Who may reach the server and what it may read: `test_access_manifests`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from hapi_grpc.config import Settings
from hapi_grpc.transport.server import AFTER_GRACE_SECONDS, drain_seconds
from tests.deploy.conftest import DEPLOY, ROOT

SCRIPT = ROOT / "scripts" / "validate_manifests.py"
SERVICE_NAME = "hapi.v1.IncidentAnalysisService"
LONGEST_INVESTIGATION_SECONDS = 300

# Runs the validator with every socket connection refused: it must not need
# the network (CI has none beyond package registries, and needs none here).
_OFFLINE = (
    "import runpy, socket, sys\n"
    "def _refuse(*args, **kwargs):\n"
    "    raise OSError('network access attempted')\n"
    "socket.socket.connect = _refuse\n"
    "socket.create_connection = _refuse\n"
    "sys.argv = [sys.argv[1], *sys.argv[2:]]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def _validate(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _OFFLINE, str(SCRIPT), str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def test_manifests_validate_offline() -> None:
    result = _validate(DEPLOY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "network access attempted" not in result.stderr
    assert "ServiceMonitor/hapi-grpc" in result.stdout
    assert "catalog with" in result.stdout


@pytest.mark.parametrize(
    ("file_name", "old", "new", "expected"),
    [
        # A misspelled field: strict schemas reject unknown properties.
        (
            "deployment.yaml",
            "readinessProbe:",
            "readinessProbes:",
            "'readinessProbes' was unexpected",
        ),
        # A wrong type.
        ("deployment.yaml", "memory: 512Mi", "memory: [512Mi]", "limits.memory"),
        # The CRD the bundled schemas do not cover.
        ("servicemonitor.yaml", "interval: 30s", "interval: 30 seconds", "interval"),
        # References between resources.
        ("service.yaml", "targetPort: metrics", "targetPort: metric", "targetPort 'metric'"),
        (
            "poddisruptionbudget.yaml",
            "matchLabels:\n      app.kubernetes.io/name: hapi-grpc",
            "matchLabels:\n      app.kubernetes.io/name: other",
            "matches no pod",
        ),
        # A binding to a role nobody defined.
        (
            "clusterrolebinding.yaml",
            "  name: hapi-grpc-investigator\nsubjects:",
            "  name: hapi-grpc-reader\nsubjects:",
            "roleRef ClusterRole 'hapi-grpc-reader' is not defined",
        ),
        # The investigation role's token, no longer mounted.
        (
            "deployment.yaml",
            "mountPath: /var/run/secrets/kubernetes.io/serviceaccount",
            "mountPath: /var/run/secrets/kubernetes.io/sa",
            "ServiceAccount 'hapi-grpc' is bound to a role but its token is not mounted",
        ),
        # The catalog goes through the service's own loader.
        ("catalog.yaml", "type: integer", "type: whole-number", "catalog invalid"),
        # Custom resources against the CRDs shipped beside them: a field the
        # kind does not have, and a value its schema refuses.
        (
            "optional/kubernetes-catalog.example.yaml",
            "  execution:\n",
            "  executor:\n",
            "'executor' was unexpected",
        ),
        (
            "optional/kubernetes-catalog.example.yaml",
            "actionType: IncreaseMemoryLimits",
            "actionType: increase-memory-limits",
            "spec.actionType",
        ),
    ],
)
def test_validator_catches_broken_manifests(
    tmp_path: Path, file_name: str, old: str, new: str, expected: str
) -> None:
    broken = tmp_path / "deploy"
    shutil.copytree(DEPLOY, broken)
    target = broken / file_name
    text = target.read_text(encoding="utf-8")
    if file_name == "poddisruptionbudget.yaml":
        text = text.replace(
            "app.kubernetes.io/name: hapi-grpc\n", "app.kubernetes.io/name: other\n"
        )
    else:
        assert old in text
        text = text.replace(old, new, 1)
    target.write_text(text, encoding="utf-8")

    result = _validate(broken)
    assert result.returncode == 1, result.stdout
    assert expected in result.stdout, result.stdout


def test_unlisted_manifest_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "deploy"
    shutil.copytree(DEPLOY, broken)
    (broken / "forgotten.yaml").write_text("apiVersion: v1\nkind: Namespace\n", encoding="utf-8")
    result = _validate(broken)
    assert result.returncode == 1
    assert "forgotten.yaml: not used by kustomization.yaml" in result.stdout


def test_probes_are_native_grpc(container: dict[str, Any]) -> None:
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        spec = container[probe]
        assert set(spec) & {"httpGet", "exec", "tcpSocket"} == set(), probe
        assert spec["grpc"]["port"] == 50051, probe
    # Liveness asks about the process, readiness about the service.
    assert "service" not in container["livenessProbe"]["grpc"]
    assert container["readinessProbe"]["grpc"]["service"] == SERVICE_NAME


def test_ports(container: dict[str, Any], docs: dict[tuple[str, str], dict[str, Any]]) -> None:
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": 50051, "metrics": 9090}
    service_ports = {p["name"]: p["port"] for p in docs[("Service", "hapi-grpc")]["spec"]["ports"]}
    assert service_ports == {"grpc": 50051, "metrics": 9090}


def test_runs_as_non_root_with_a_locked_down_container(
    pod: dict[str, Any], container: dict[str, Any]
) -> None:
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert "add" not in security["capabilities"]
    assert pod.get("hostNetwork") is not True and "privileged" not in security


def _quantity(value: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    match = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi)?", str(value))
    assert match, value
    return float(match.group(1)) * units.get(match.group(2) or "", 1)


def test_resources_requested_and_limited(container: dict[str, Any]) -> None:
    resources = container["resources"]
    for kind in ("cpu", "memory"):
        request = _quantity(resources["requests"][kind])
        limit = _quantity(resources["limits"][kind])
        assert 0 < request <= limit, kind


# Measured: the server once it has served its first calls (bench/bench_soak_memory.py
# starts at 122 MiB with a Data Storage catalog and an HTTP model), and what one
# investigation in flight holds (bench/bench_concurrent_investigations.py).
SERVING_BYTES = 125 * 1024 * 1024
PER_INVESTIGATION_BYTES = 64 * 1024


def store_bounds(settings: Settings) -> dict[str, int]:
    """The byte bound of every store the server keeps in its own memory."""
    from hapi_grpc.adapters import remediation_counter
    from hapi_grpc.adapters.history import datastorage

    review_caches = 3 * 10_000 * 1024  # TokenReview, and SubjectAccessReview read and report
    return {
        "kept results": settings.result_max_bytes,
        "outcomes": settings.history_max_bytes,
        "decisions": settings.history_max_decision_bytes,
        "catalog cache": settings.cache_max_bytes,
        "history answers": datastorage.MAX_CACHE_BYTES,
        "rate-limit logs": remediation_counter.DEFAULT_MAX_BYTES,
        "catalog searches": 4 * 1024 * 1024,
        "access reviews": review_caches,
    }


def test_the_stores_bounds_fit_the_memory_limit_with_margin(
    container: dict[str, Any], settings_env: dict[str, str]
) -> None:
    """docs/operations.md "Limits and memory": serving, every investigation the
    cap admits, and every store full stay under 85% of the container's limit."""
    settings = Settings.from_env(settings_env)
    limit = _quantity(container["resources"]["limits"]["memory"])
    stores = sum(store_bounds(settings).values())
    in_flight = settings.max_concurrent_rpcs * PER_INVESTIGATION_BYTES
    assert SERVING_BYTES + in_flight + stores <= 0.85 * limit, (stores, in_flight, limit)


def shutdown_problems(pod: dict[str, Any], env: dict[str, str]) -> list[str]:
    """Why a SIGTERM could cut an investigation short or be cut by SIGKILL, from
    the manifests and the server's own shutdown arithmetic (empty: it adds up)."""
    settings = Settings.from_env(env)
    longest = settings.max_budget_seconds  # enforced whatever the caller's deadline
    delay, grace = settings.shutdown_delay_seconds, settings.shutdown_grace_seconds
    kill_after = pod["terminationGracePeriodSeconds"]
    problems = []
    if settings.default_budget_seconds > longest:
        problems.append("the default budget exceeds the maximum (it is capped)")
    # A call accepted at the end of the delay runs `longest` more seconds; the
    # drain cuts investigations drain_seconds(grace) after the delay.
    if longest > drain_seconds(grace):
        problems.append(
            f"a {longest:.0f} s investigation outlasts the drain of a {grace:.0f} s grace"
        )
    needed = delay + grace + AFTER_GRACE_SECONDS
    if kill_after < needed:
        problems.append(f"terminationGracePeriodSeconds {kill_after} < {needed:.0f} s of shutdown")
    return problems


def test_shutdown_arithmetic_adds_up(pod: dict[str, Any], settings_env: dict[str, str]) -> None:
    assert shutdown_problems(pod, settings_env) == []
    assert Settings.from_env(settings_env).max_budget_seconds == LONGEST_INVESTIGATION_SECONDS


@pytest.mark.parametrize(
    ("changes", "termination", "expected"),
    [
        ({"HAPI_MAX_BUDGET_SECONDS": "600"}, None, "outlasts the drain"),
        ({"HAPI_SHUTDOWN_GRACE_SECONDS": "301"}, None, "outlasts the drain"),
        ({}, 340, "terminationGracePeriodSeconds 340"),
        ({"HAPI_SHUTDOWN_DELAY_SECONDS": "30"}, None, "terminationGracePeriodSeconds 360"),
        ({"HAPI_DEFAULT_BUDGET_SECONDS": "900"}, None, "default budget exceeds"),
    ],
)
def test_shutdown_arithmetic_catches_what_does_not_add_up(
    pod: dict[str, Any],
    settings_env: dict[str, str],
    changes: dict[str, str],
    termination: int | None,
    expected: str,
) -> None:
    changed_pod = {**pod, "terminationGracePeriodSeconds": termination or 360}
    problems = shutdown_problems(changed_pod, {**settings_env, **changes})
    assert any(expected in p for p in problems), problems


def test_catalog_configmap_is_mounted_where_the_setting_points(
    pod: dict[str, Any], container: dict[str, Any], settings_env: dict[str, str]
) -> None:
    catalog_file = PurePosixPath(settings_env["HAPI_CATALOG_FILE"])
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    (generator,) = [
        g for g in kustomization["configMapGenerator"] if g["name"] == "hapi-grpc-catalog"
    ]
    assert catalog_file.name in [PurePosixPath(f).name for f in generator["files"]]
    (volume,) = [
        v["name"] for v in pod["volumes"] if v.get("configMap", {}).get("name") == generator["name"]
    ]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume)
    assert PurePosixPath(mount["mountPath"]) == catalog_file.parent


def test_settings_configmap_is_understood_by_the_server(settings_env: dict[str, str]) -> None:
    known = {f"HAPI_{name.upper()}" for name in Settings.model_fields} | {
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    }
    unknown = set(settings_env) - known
    assert not unknown, f"settings the server does not read: {sorted(unknown)}"
    settings = Settings.from_env(settings_env)
    assert settings.grpc_port == 50051
    assert settings.metrics_port == 9090
    assert settings.log_format == "json"


def test_settings_configmap_shows_the_kubernetes_and_retry_settings(
    settings_env: dict[str, str],
) -> None:
    settings = Settings.from_env(settings_env)
    defaults = Settings()
    assert settings_env["HAPI_KUBERNETES"] == "auto"
    assert settings.kubernetes == defaults.kubernetes
    assert settings.result_ttl_seconds == defaults.result_ttl_seconds == 900
    assert settings.kubernetes_max_calls == defaults.kubernetes_max_calls
    assert settings.kubernetes_call_timeout == defaults.kubernetes_call_timeout


def test_disruption_budget_and_scrape_config(docs: dict[tuple[str, str], dict[str, Any]]) -> None:
    pdb = docs[("PodDisruptionBudget", "hapi-grpc")]
    deployment = docs[("Deployment", "hapi-grpc")]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert deployment["spec"]["replicas"] >= 2  # a PDB on one replica would block drains

    monitor = docs[("ServiceMonitor", "hapi-grpc")]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"


# --- Dockerfile ----------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def test_dockerfile_structure() -> None:
    steps = _instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    stages = [args for word, args in steps if word == "FROM"]
    assert len(stages) >= 3, "multi-stage: protos, build, runtime"
    final = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    runtime = steps[final:]

    users = [args for word, args in runtime if word == "USER"]
    assert users, "the runtime stage sets a USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "numeric non-root user (runAsNonRoot can check it)"

    (entrypoint,) = [args for word, args in runtime if word == "ENTRYPOINT"]
    assert entrypoint == '["hapi-grpc", "serve"]'
    exposed = {p for word, args in runtime if word == "EXPOSE" for p in args.split()}
    assert {"50051", "9090"} <= exposed

    # Wheels are built in the build stage; the runtime installs them offline.
    build_runs = " ".join(args for word, args in steps[:final] if word == "RUN")
    assert "pip wheel" in build_runs and "gen_python.sh" in build_runs
    runtime_runs = " ".join(args for word, args in runtime if word == "RUN")
    assert "--no-index" in runtime_runs


def test_dockerignore_keeps_the_build_context_small() -> None:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert lines[lines.index("*")] == "*"  # deny by default
    copied = [
        args.split()[0]
        for word, args in _instructions((ROOT / "Dockerfile").read_text())
        if word == "COPY" and not args.startswith("--from")
    ]
    for source in copied:
        assert f"!{source}" in lines, f"{source} is copied but excluded from the build context"
