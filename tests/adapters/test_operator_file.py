"""HAPI_PREMISES_FILE and the policy's allow_unverified: what the operator adds for a
catalog they do not control, checked at start like the policy file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hapi_grpc.adapters.operator_files import read_premises
from hapi_grpc.app import build_premises
from hapi_grpc.config import ConfigError, Settings
from hapi_grpc.domain.policy.rules import PolicyError, parse_policy
from hapi_grpc.domain.premises import PackError
from tests.domain.premises.scenes import (
    NS,
    container,
    crash_status,
    node,
    oomkilled_statefulset,
    pod,
    record,
    running_status,
    schema,
    verdict,
)
from tests.fakes.serve_process import ServeProcess

OPERATOR = """
packs:
  - action_type: IncreaseMemoryLimits      # added to the shipped pack
    invariants:
      - name: at_most_2gi
        message: the platform team caps container memory at 2Gi
        expression: quantity(string(params.memory_limit)) <= quantity("2Gi")
  - action_type: RestartDatabase           # an operator type gets a pack
    target: workload
    invariants:
      - name: statefulset_read
        expression: >-
          observed.workloads.exists(w, w.kind == "StatefulSet" && w.name == params.workload)
workflows:
  - workflow_id: bounce-v1                  # loosely typed: judged as RestartPod
    action_type: RestartPod
    roles: {pod: VICTIM, namespace: NS}
"""
RAISE = schema("IncreaseMemoryLimits", "NAMESPACE", "STATEFULSET_NAME", "MEMORY_LIMIT_NEW")
RAISE_PARAMS = {"NAMESPACE": NS, "STATEFULSET_NAME": "ledger"}


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "premises.yaml"
    path.write_text(text)
    return str(path)


def test_operator_packs_add_to_shipped_ones_and_type_their_own(tmp_path: Path) -> None:
    book = read_premises(write(tmp_path, OPERATOR))
    observed = oomkilled_statefulset()
    ok = {**RAISE_PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}
    assert verdict(observed, RAISE, ok, book) is None
    veto = verdict(observed, RAISE, {**RAISE_PARAMS, "MEMORY_LIMIT_NEW": "3Gi"}, book)
    assert veto is not None and "IncreaseMemoryLimits.at_most_2gi" in veto.message
    # The shipped pack still applies under the operator's addition.
    veto = verdict(observed, RAISE, {**RAISE_PARAMS, "MEMORY_LIMIT_NEW": "1Gi"}, book)
    assert veto is not None and "memory_limit_raised" in veto.message
    restart_db = schema("RestartDatabase", "NAMESPACE", "TARGET_RESOURCE_NAME")
    db = {"NAMESPACE": NS, "TARGET_RESOURCE_NAME": "ledger"}
    assert verdict(observed, restart_db, db, book) is None
    without = verdict(observed, restart_db, db)  # the shipped packs alone: unverified
    assert without is not None and "no premise declared" in without.message


def test_a_workflow_judged_as_another_type_with_its_roles_mapped(tmp_path: Path) -> None:
    book = read_premises(write(tmp_path, OPERATOR))
    bounce = schema("RollbackDeployment", "NS", "VICTIM", workflow_id="bounce-v1")
    sibling = pod("web-a1-ok", "web-a1", [container("web")], [running_status("web")], ready=True)
    hung = pod(
        "web-a1-h", "web-a1", [container("web")], [{"name": "web", "state": {"running": {}}}]
    )
    looping = pod("web-a1-l", "web-a1", [container("web")], [crash_status("web")])
    observed = record(node("node-1"), sibling, hung, looping)
    assert verdict(observed, bounce, {"NS": NS, "VICTIM": "web-a1-h"}, book) is None
    veto = verdict(observed, bounce, {"NS": NS, "VICTIM": "web-a1-l"}, book)
    assert veto is not None and "RestartPod.not_failing_like_a_fresh_pod" in veto.message


def test_replace_drops_the_shipped_pack(tmp_path: Path) -> None:
    text = """
packs:
  - action_type: IncreaseMemoryLimits
    replace: true
    invariants:
      - name: limit_given
        expression: has(params.memory_limit)
"""
    book = read_premises(write(tmp_path, text))
    pack = book.pack("IncreaseMemoryLimits")
    assert pack is not None and [c.name for c in pack.invariants] == ["limit_given"]
    assert not pack.preconditions


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("packs: [{action_type: Foo", "is not valid YAML at line 1"),
        ("rules: []", "expected a mapping with 'packs' and/or 'workflows'"),
        (
            "packs: [{action_type: Foo, invariants: [{name: x, expression: 'params.a +'}]}]",
            "pack 'Foo' (packs[0]): invariants.0.expression",
        ),
        ("packs: [{action_type: foo}]", "pack 'foo' (packs[0]): action_type"),
        (
            "packs: [{action_type: Foo, target: gizmo}]",
            "pack 'Foo': target: unknown role 'gizmo'",
        ),
        (
            "packs: [{action_type: Foo, roles: {gizmo: [GIZMO]}}]",
            "pack 'Foo': roles: unknown role 'gizmo'",
        ),
        (
            "workflows: [{workflow_id: w-v1, roles: {podd: POD}}]",
            "workflow 'w-v1': roles: unknown role 'podd'",
        ),
        ("workflows: [{workflow_id: w-v1, typo: 1}]", "workflow 'w-v1' (workflows[0]): typo"),
    ],
)
def test_a_broken_file_is_refused_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PackError) as refused:
        read_premises(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ConfigError) as caught:
        build_premises(Settings(premises_file=path))
    assert str(caught.value).startswith("HAPI_PREMISES_FILE: ")


def test_serve_refuses_a_bad_premises_file_with_one_line_and_status_2(tmp_path: Path) -> None:
    path = write(tmp_path, "packs: [{action_type: Foo, target: gizmo}]")
    env = {**os.environ, "HAPI_PREMISES_FILE": path, "HAPI_GRPC_PORT": "0"}
    env.update(HAPI_METRICS_PORT="-1", HAPI_KUBERNETES="off")
    done = subprocess.run(
        [sys.executable, "-m", "hapi_grpc.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # One line naming the setting, the file, the pack and the field.
    assert (
        last == f"hapi-grpc: HAPI_PREMISES_FILE: {path}: pack 'Foo': target: unknown role 'gizmo'"
    )


# Nine levels of nine anchors as a workflow's id: a refusal that names the entry quoted
# all 387,420,489 strings of it (a 1.2 s, 240 MB message) before aliases were bounded.
ALIAS_BOMB_ID = (
    "workflows:\n  - workflow_id:\n      a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"      {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
        for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (ALIAS_BOMB_ID, "aliases expand to more than 100000 nodes"),
        ("workflows: " + "[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ],
)
def test_serve_refuses_a_deep_or_alias_bomb_premises_file_with_one_line(
    tmp_path: Path, text: str, problem: str
) -> None:
    serve = ServeProcess(HAPI_PREMISES_FILE=write(tmp_path, text), HAPI_KUBERNETES="off")
    assert serve.run_refused(timeout=30) == 2, serve.log()[-2000:]
    log = serve.log().strip()
    assert log.startswith("hapi-grpc: HAPI_PREMISES_FILE: ") and problem in log
    assert len(log) < 500 and "Traceback" not in log


@pytest.mark.parametrize("key", ["workflows: [{workflow_id: ", "packs: [{action_type: "])
def test_a_refusal_quotes_an_entry_name_bounded(tmp_path: Path, key: str) -> None:
    huge = "[" + ", ".join(["item"] * 100_000) + "]"  # 600 KB, no aliases
    with pytest.raises(PackError) as refused:
        read_premises(write(tmp_path, key + huge + ", typo: 1}]"))
    assert len(str(refused.value)) < 300


def test_premises_check_shows_how_each_workflow_is_judged(tmp_path: Path) -> None:
    path = write(tmp_path, OPERATOR)
    catalog = tmp_path / "catalog.yaml"
    entries = [
        {
            "workflow_id": "raise-v1",
            "version": "1",
            "title": "t",
            "action_type": "IncreaseMemoryLimits",
            "parameters": [
                {"name": "TARGET_RESOURCE_NAMESPACE"},
                {"name": "TARGET_RESOURCE_NAME"},
                {"name": "MEMORY_INCREASE_PERCENT", "type": "integer"},
            ],
        },
        {"workflow_id": "odd-v1", "version": "1", "title": "t", "action_type": "ReticulateSplines"},
    ]
    catalog.write_text(yaml.safe_dump({"workflows": entries}))

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hapi_grpc.cli", "premises", "check", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = check(path, "--catalog", str(catalog))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("raise-v1: 'IncreaseMemoryLimits': pack IncreaseMemoryLimits")
    assert "memory_increase_percent=MEMORY_INCREASE_PERCENT" in lines[0]
    assert "workload=TARGET_RESOURCE_NAME" in lines[0]
    assert lines[1].startswith("odd-v1: 'ReticulateSplines': UNVERIFIED (unknown action type")
    assert lines[-1].endswith("2 operator packs, 1 workflow entries OK")
    refused = check(write(tmp_path, "packs: [{action_type: Foo, target: gizmo}]"))
    assert refused.returncode == 1 and "unknown role 'gizmo'" in refused.stderr


def test_the_policy_names_what_may_be_automated_unverified() -> None:
    policy = parse_policy(
        {"allow_unverified": {"action_types": ["RestartDatabase"], "workflows": ["flush-v1"]}}
    )
    assert policy.allows_unverified("any-v1", "RestartDatabase")
    assert policy.allows_unverified("flush-v1", "")
    assert not policy.allows_unverified("any-v1", "RestartPod")
    for bad in ({"action_types": "RestartDatabase"}, {"types": []}, {"workflows": ["*"]}):
        with pytest.raises(PolicyError, match="allow_unverified"):
            parse_policy({"allow_unverified": bad})

    async def allow(workflow_id: str, action_type: str) -> bool:
        return policy.allows_unverified(workflow_id, action_type)

    unknown = schema("RestartDatabase", "NAMESPACE")
    assert verdict(record(), unknown, {"NAMESPACE": NS}, allow=allow) is None
    other = schema("ReticulateSplines", "NAMESPACE")
    assert verdict(record(), other, {"NAMESPACE": NS}, allow=allow) is not None
