"""Kubernetes manifests: who may reach the server and what it may read.

The investigation role is read-only and never reads Secrets, the service
account token is projected into the server only, the LLM key is a mounted
file, callers are authenticated and listed, and the network policy admits
only their namespaces.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from hapi_grpc.config import Settings


def test_llm_key_is_a_mounted_file_never_an_env_var(
    pod: dict[str, Any], container: dict[str, Any], settings_env: dict[str, str]
) -> None:
    key_file = PurePosixPath(settings_env["HAPI_LLM_API_KEY_FILE"])
    secret_volumes = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    (volume,) = [n for n, s in secret_volumes.items() if s["secretName"] == "hapi-grpc-llm"]
    assert PurePosixPath(mounts[volume]["mountPath"]) == key_file.parent
    assert mounts[volume]["readOnly"] is True

    for entry in container.get("env", []):
        assert "secretKeyRef" not in entry.get("valueFrom", {}), entry["name"]
    assert all("secretRef" not in source for source in container.get("envFrom", []))
    assert "HAPI_LLM_API_KEY" not in settings_env


def test_investigation_role_is_read_only_and_never_reads_secrets(
    docs: dict[tuple[str, str], dict[str, Any]],
) -> None:
    role = docs[("ClusterRole", "hapi-grpc-investigator")]
    granted = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, rule  # no nonResourceURLs
        assert set(rule["verbs"]) <= {"get", "list"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert "*" not in (group, resource), rule
                assert resource.split("/")[0] != "secrets", rule
                granted.add((group, resource))
    assert {("", "pods"), ("", "pods/log"), ("", "nodes"), ("events.k8s.io", "events")} <= granted
    assert ("cert-manager.io", "certificates") in granted

    binding = docs[("ClusterRoleBinding", "hapi-grpc-investigator")]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "hapi-grpc-investigator",
    }
    (subject,) = binding["subjects"]
    account = docs[("ServiceAccount", "hapi-grpc")]
    assert subject == {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": "hapi",
    }


def test_service_account_token_is_projected_into_the_server_only(
    pod: dict[str, Any], container: dict[str, Any], docs: dict[tuple[str, str], dict[str, Any]]
) -> None:
    # Not automounted (neither by the account nor the pod): one explicit,
    # read-only, expiring token where the Kubernetes client looks for it.
    assert docs[("ServiceAccount", "hapi-grpc")]["automountServiceAccountToken"] is False
    assert pod["automountServiceAccountToken"] is False
    token_dir = PurePosixPath(Settings().tokenreview_token_file).parent
    (mount,) = [m for m in container["volumeMounts"] if PurePosixPath(m["mountPath"]) == token_dir]
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    sources = volume["projected"]["sources"]
    (token,) = [s["serviceAccountToken"] for s in sources if "serviceAccountToken" in s]
    assert token["path"] == "token" and 600 <= token["expirationSeconds"] <= 86_400
    assert "audience" not in token  # the API server's own audience
    files = {i["path"] for s in sources for i in next(iter(s.values())).get("items", [])}
    assert {"ca.crt", "namespace"} <= files
    assert str(token_dir / "ca.crt") == Settings().tokenreview_ca_file


def test_egress_reaches_dns_and_the_api_server(
    docs: dict[tuple[str, str], dict[str, Any]],
) -> None:
    policy = docs[("NetworkPolicy", "hapi-grpc")]["spec"]
    assert "Egress" in policy["policyTypes"]

    def allowed(port: int, protocol: str = "TCP", cidr: str = "0.0.0.0/0") -> bool:
        for rule in policy["egress"]:
            ports = rule.get("ports")
            port_ok = ports is None or any(
                p["port"] == port and p.get("protocol", "TCP") == protocol for p in ports
            )
            peers = rule.get("to")
            peer_ok = peers is None or any(p.get("ipBlock", {}).get("cidr") == cidr for p in peers)
            if port_ok and peer_ok:
                return True
        return False

    assert allowed(53, "UDP") and allowed(53, "TCP")
    # The `kubernetes` Service's port, and the API server's own (kubeadm).
    assert allowed(443) and allowed(6443) and allowed(443, cidr="::/0")


# --- Secure by default ---------------------------------------------------------


def _caller_namespaces(settings: Settings) -> set[str]:
    namespaces = set()
    for user in settings.auth_allowed_callers:
        prefix, _, rest = user.partition("system:serviceaccount:")
        assert not prefix and rest.count(":") == 1, f"not a service account: {user}"
        namespaces.add(rest.split(":")[0])
    return namespaces


def test_callers_are_authenticated_and_listed(settings_env: dict[str, str]) -> None:
    settings = Settings.from_env(settings_env)
    assert settings.auth_mode == "tokenreview"
    assert settings.auth_allowed_callers and "*" not in "".join(settings.auth_allowed_callers)
    assert _caller_namespaces(settings)
    assert (settings.authz_verb, settings.authz_resource) == ("get", "pods")
    assert 0 < settings.authz_cache_seconds <= 60
    assert settings.tool_output_exposure == "full"


def test_grpc_ingress_only_from_the_callers_namespaces(
    docs: dict[tuple[str, str], dict[str, Any]], settings_env: dict[str, str]
) -> None:
    policy = docs[("NetworkPolicy", "hapi-grpc")]["spec"]
    assert "Ingress" in policy["policyTypes"]
    by_port: dict[str, list[dict[str, Any]]] = {}
    for rule in policy["ingress"]:
        ports = [p["port"] for p in rule["ports"]]  # no rule without ports
        assert rule.get("from"), rule  # no rule open to every peer
        for port in ports:
            by_port.setdefault(port, []).extend(rule["from"])
    assert set(by_port) == {"grpc", "metrics"}

    def namespaces(peers: list[dict[str, Any]]) -> set[str]:
        found = set()
        for peer in peers:
            assert set(peer) <= {"namespaceSelector", "podSelector"}, peer  # no ipBlock
            labels = peer["namespaceSelector"]["matchLabels"]
            assert set(labels) == {"kubernetes.io/metadata.name"}, peer
            found.add(labels["kubernetes.io/metadata.name"])
        return found

    callers = _caller_namespaces(Settings.from_env(settings_env))
    assert namespaces(by_port["grpc"]) == callers
    assert namespaces(by_port["metrics"]) == {"monitoring"}


def test_the_server_may_review_tokens_and_access_and_nothing_more(
    docs: dict[tuple[str, str], dict[str, Any]],
) -> None:
    role = docs[("ClusterRole", "hapi-grpc-auth")]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    binding = docs[("ClusterRoleBinding", "hapi-grpc-auth")]
    assert binding["roleRef"]["name"] == "hapi-grpc-auth"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "hapi-grpc", "namespace": "hapi"}
    ]
