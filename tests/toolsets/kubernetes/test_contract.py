"""Records typed; kind spellings; views offline (argument models against tools.proto:
tests/toolsets/test_registry.py)."""

from __future__ import annotations

import pytest

from hapi_grpc.domain.result import ToolCallRecord, ToolCallStatus
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope, ScopeRefusal, kind_key
from hapi_grpc.toolsets.kubernetes.views import object_view
from hapi_grpc.transport.converters import tool_call_to_proto


def test_records_are_typed() -> None:
    record = ToolCallRecord(
        name="kubernetes_pod_logs",
        raw_arguments="{}",
        arguments={"namespace": "ns", "pod": "p", "previous": True, "tail_lines": 20},
        result="{}",
        status=ToolCallStatus.SUCCESS,
        duration_seconds=0.01,
    )
    msg = tool_call_to_proto(record)
    assert msg.WhichOneof("arguments") == "kubernetes_pod_logs"
    assert msg.kubernetes_pod_logs.previous and msg.kubernetes_pod_logs.tail_lines == 20


@pytest.mark.parametrize(
    "spelling",
    ["secret", "secrets", "Secret", "v1/Secret", "core/v1/secrets", "SECRETS", "Secrets.v1"],
)
def test_every_spelling_of_secret_is_refused(spelling: str) -> None:
    assert kind_key(spelling) == "secret"
    with pytest.raises(ScopeRefusal, match="never read"):
        KubernetesScope().check_kind(spelling)


def test_kind_keys_of_other_kinds() -> None:
    assert kind_key("NetworkPolicies") == "networkpolicy"
    assert kind_key("ingresses") == "ingress"
    assert kind_key("apps/v1/Deployments") == "deployment"
    assert kind_key("Ingress") == "ingress"


def test_scope_allow_deny_and_kinds() -> None:
    scope = KubernetesScope.of(allow=["prod-*", "payments"], deny=["prod-secure"], kinds=["Pod"])
    scope.namespaces.check("prod-eu")
    with pytest.raises(ScopeRefusal, match="excluded"):
        scope.namespaces.check("prod-secure")
    with pytest.raises(ScopeRefusal, match="allowed: prod-"):
        scope.namespaces.check("kube-system")
    with pytest.raises(ScopeRefusal, match="allowed kinds: Pod"):
        scope.check_kind("Deployment")
    scope.check_kind("pods")


def test_configmap_view_shows_keys_only_and_noise_is_dropped() -> None:
    view = object_view(
        {
            "kind": "ConfigMap",
            "metadata": {
                "name": "cfg",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            },
            "data": {"DB_URL": "postgres://user:hunter2@db/x", "mode": "fast"},
        }
    )
    assert view == {"kind": "ConfigMap", "name": "cfg", "data_keys": ["DB_URL", "mode"]}


def test_env_values_are_references_or_redacted() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "env": [
                        {"name": "DB_PASSWORD", "value": "hunter2"},
                        {"name": "MODE", "value": "fast"},
                        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    ],
                    "envFrom": [{"secretRef": {"name": "all"}}],
                }
            ]
        },
    }
    env = object_view(pod)["containers"][0]["env"]
    assert env == [
        "DB_PASSWORD=[REDACTED]",
        "MODE=fast",
        "KEY from secret s key k",
        "all keys of secret all",
    ]
