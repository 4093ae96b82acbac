"""HAPI_POLICY_FILE: checked at start, reloaded on change, a broken reload keeps the last good."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import json_format

from hapi.v1 import service_pb2, service_pb2_grpc
from hapi_grpc.adapters.operator_files import PolicyFile, read_policy
from hapi_grpc.app import build_policy
from hapi_grpc.config import ConfigError, Settings
from hapi_grpc.domain.policy.rules import PolicyError
from tests.adapters.conftest import WORKFLOW
from tests.e2e.test_analyze_e2e import GOOD, OOM_REQUEST, answer, search, validate
from tests.fakes.clock import ManualClock
from tests.fakes.scripted_llm import ScriptedLLMServer
from tests.fakes.serve_process import ServeProcess

ONE = "rules:\n  - name: first\n    action: require_review\n"
TWO = ONE + "  - name: second\n    action: forbid\n    when: workflow.id == 'x'\n"
BROKEN = ONE + "  - name: broken-rule\n    action: forbid\n    when: 'workflow.id =='\n"


def write(path: Path, text: str) -> None:
    path.write_text(text)
    # Some filesystems keep one mtime per second: make each write a new one.
    stamp = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


def names(source: PolicyFile) -> list[str]:
    return [rule.name for rule in source.policy.rules]


def test_reload_on_change(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    write(path, ONE)
    source = PolicyFile.load(str(path))
    assert names(source) == ["first"]
    assert source.reload_if_changed() is False  # unchanged: nothing read
    write(path, TWO)
    assert source.reload_if_changed() is True
    assert names(source) == ["first", "second"]


def test_a_broken_reload_keeps_the_last_good_policy_and_logs_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.yaml"
    write(path, TWO)
    source = PolicyFile.load(str(path))
    write(path, BROKEN)
    with caplog.at_level(logging.WARNING, logger="hapi_grpc.adapters.operator_files"):
        assert source.reload_if_changed() is False
        assert source.reload_if_changed() is False  # the same broken file: not tried again
    assert names(source) == ["first", "second"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "broken-rule" in lines[0] and "\n" not in lines[0]
    assert "last good policy" in lines[0]
    write(path, ONE)  # fixed: loaded again
    assert source.reload_if_changed() is True
    assert names(source) == ["first"]


def test_a_removed_file_keeps_the_last_good_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    write(path, ONE)
    source = PolicyFile.load(str(path))
    path.unlink()
    assert source.reload_if_changed() is False
    assert names(source) == ["first"]


def test_a_configmap_symlink_swap_is_followed(tmp_path: Path) -> None:
    """Kubernetes updates a mounted ConfigMap by pointing `..data` at a new directory."""
    old, new = tmp_path / "..2026_old", tmp_path / "..2026_new"
    old.mkdir()
    new.mkdir()
    (old / "policy.yaml").write_text(ONE)
    (new / "policy.yaml").write_text(TWO)
    (tmp_path / "..data").symlink_to(old.name)
    (tmp_path / "policy.yaml").symlink_to("..data/policy.yaml")
    source = PolicyFile.load(str(tmp_path / "policy.yaml"))
    assert names(source) == ["first"]
    (tmp_path / "..data_tmp").symlink_to(new.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")  # atomic, as the kubelet does
    assert source.reload_if_changed() is True
    assert names(source) == ["first", "second"]


async def test_current_looks_at_the_file_once_per_interval(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    write(path, ONE)
    clock = ManualClock()
    source = PolicyFile(str(path), read_policy(str(path)), None, check_interval=5, clock=clock)
    write(path, TWO)
    assert [r.name for r in (await source.current()).rules] == ["first"]  # not yet looked
    clock.advance(5)
    assert [r.name for r in (await source.current()).rules] == ["first", "second"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BROKEN, "rule 'broken-rule' (rules[1]): when: is not valid CEL: line 1 column 15:"),
        ("rules: [{name: a, action: forbid", "is not valid YAML at line 1"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_start_fails_with_one_line(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "policy.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(PolicyError) as refused:
        read_policy(str(path))
    assert message in str(refused.value)
    with pytest.raises(ConfigError) as caught:
        build_policy(Settings(policy_file=str(path)))
    assert str(caught.value).startswith("HAPI_POLICY_FILE: ")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_policy_file_is_a_configuration_error(tmp_path: Path) -> None:
    settings = Settings(policy_file=str(tmp_path / "absent.yaml"))
    with pytest.raises(ConfigError, match="HAPI_POLICY_FILE: cannot read"):
        settings.check_files()


def test_no_policy_file_no_policy() -> None:
    assert build_policy(Settings()) is None


def test_serve_refuses_a_bad_policy_with_one_line_and_status_2(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(BROKEN)
    env = {**os.environ, "HAPI_POLICY_FILE": str(path), "HAPI_GRPC_PORT": "0"}
    env.update(HAPI_METRICS_PORT="-1", HAPI_KUBERNETES="off")
    done = subprocess.run(
        [sys.executable, "-m", "hapi_grpc.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("hapi-grpc: HAPI_POLICY_FILE: rule 'broken-rule' (rules[1])")


def test_policy_check_command_loads_the_file_as_the_server_does(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "deploy" / "optional" / "policy.example.yaml"
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_load(example.read_text())["data"]["policy.yaml"])
    bad = tmp_path / "bad.yaml"
    bad.write_text(BROKEN)

    def check(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hapi_grpc.cli", "policy", "check", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    ok = check(good)
    assert ok.returncode == 0, ok.stderr
    rules = len(read_policy(str(good)).rules)
    assert rules > 0 and ok.stdout.strip() == f"{good}: {rules} rules OK"
    refused = check(bad)
    assert refused.returncode == 1
    assert refused.stderr.strip().startswith("hapi-grpc: rule 'broken-rule' (rules[1])")


# --- bounds: aliases, special files, reloads that never hold the loop or shutdown ----

# 294 bytes of YAML whose every level names the one before nine times: expanded,
# 10^9 strings. An error that quotes the value would render all of them.
ALIAS_BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    + "rules:\n  - name: bomb\n    action: *i\n"
)


def _check_command(path: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hapi_grpc.cli", "policy", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB.encode()) < 400
    done = _check_command(path)
    assert done.returncode == 1
    assert "aliases are not allowed" in done.stderr
    assert len(done.stderr) < 400  # one bounded line, nothing expanded


def test_deep_nesting_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules: " + "[" * 5000 + "]" * 5000 + "\n")
    done = _check_command(path)
    assert done.returncode == 1
    assert "nested deeper than 64 levels" in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_action_is_quoted_bounded(tmp_path: Path) -> None:
    items = ", ".join(f"item-{i}" for i in range(20_000))
    path = tmp_path / "policy.yaml"
    path.write_text(f"rules:\n  - name: big\n    action: [{items}]\n")
    with pytest.raises(PolicyError) as info:
        read_policy(str(path))
    assert "unknown action a list" in str(info.value) and len(str(info.value)) < 300


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "policy.fifo"
    os.mkfifo(path)
    done = _check_command(path, timeout=30)  # an open() that waits would time out here
    assert done.returncode == 1
    assert "is not a regular file" in done.stderr


async def test_a_policy_file_swapped_for_a_fifo_neither_stalls_decisions_nor_shutdown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(ONE)
    # One workflow declared read-only, so no premise applies: the model's pick stands.
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"workflows": [{**WORKFLOW, "read_only": True}]}))
    model = ScriptedLLMServer("openai", [search(), validate(GOOD), answer()])
    await model.__aenter__()
    server = ServeProcess(
        HAPI_POLICY_FILE=str(path),
        HAPI_CATALOG_FILE=str(catalog),
        HAPI_POLICY_CHECK_SECONDS="0.2",
        HAPI_KUBERNETES="off",
        HAPI_LLM_PROVIDER="openai",
        HAPI_LLM_BASE_URL=model.base_url,
        HAPI_LLM_MODEL="policy-model",
        HAPI_LLM_API_KEY="sk-policy-test",
    )
    request = json_format.Parse(OOM_REQUEST, service_pb2.AnalyzeIncidentRequest())
    try:
        await server.start()
        path.unlink()
        os.mkfifo(path)  # nobody ever writes to it
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            for _ in range(3):
                await asyncio.sleep(0.3)
                response = await stub.AnalyzeIncident(request, timeout=10)
                assert response.result.selected_workflow.workflow_id  # the policy applied
        assert "is not a regular file" in server.log()
        code, seconds = await server.terminate(10.0)
        assert code is not None and seconds < 5.0, server.log()[-2000:]
    finally:
        await server.close()
        await model.__aexit__(None, None, None)
