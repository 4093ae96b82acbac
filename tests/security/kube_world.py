"""The test cluster as the authorization tests see it: two team namespaces, a
listed caller bound to read pods in team A only, an unlisted one, and the
server's own service account with the RBAC of deploy/auth-rbac.yaml."""

from __future__ import annotations

import contextlib
import datetime
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest
import yaml

from hapi.v1 import service_pb2
from hapi_grpc.client import load_analyze_request
from tests.fakes.kube_cluster import KubeCluster, ensure_namespace
from tests.helpers.grpc_server import RunningServer

ROOT = Path(__file__).resolve().parents[2]
AUTH_RBAC = list(yaml.safe_load_all((ROOT / "deploy" / "auth-rbac.yaml").read_text()))
(SERVER_ACCOUNT,) = AUTH_RBAC[1]["subjects"]
# The role a caller needs to report outcomes (deploy/caller-rbac.yaml).
(REPORTER_ROLE,) = yaml.safe_load_all((ROOT / "deploy" / "caller-rbac.yaml").read_text())
SERVER_USER = f"system:serviceaccount:{SERVER_ACCOUNT['namespace']}:{SERVER_ACCOUNT['name']}"


@dataclass
class World:
    """Namespaces, callers and the server's credentials in the test cluster."""

    cluster: KubeCluster
    team_a: str
    team_b: str
    callers_ns: str
    caller_token: str
    caller_user: str
    stranger_token: str
    server_token_file: Path
    # A second listed caller, team B's controller: it may read team B only.
    caller_b_token: str
    caller_b_user: str

    def settings(self, **overrides: Any) -> dict[str, Any]:
        return {
            "auth_mode": "tokenreview",
            "tokenreview_api_url": self.cluster.url,
            "tokenreview_ca_file": str(self.cluster.ca_file),
            "tokenreview_token_file": str(self.server_token_file),
            "auth_allowed_callers": [self.caller_user, self.caller_b_user],
            **overrides,
        }

    def rbac(self) -> kubernetes.client.RbacAuthorizationV1Api:
        return kubernetes.client.RbacAuthorizationV1Api(self.cluster.api_client())

    def bind_reader(
        self, namespace: str, name: str = "incident-reader", account: str = "controller"
    ) -> None:
        """Lets the caller `get pods` in `namespace` (and nothing else)."""
        rbac = self.rbac()
        role = {
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
        with contextlib.suppress(kubernetes.client.ApiException):
            rbac.create_namespaced_role(namespace, role, _request_timeout=30)
        self._bind(namespace, f"{name}-{account}", "Role", name, account)
        self._await_allowed(namespace, account, role["rules"][0])

    def bind_reporter(self, namespace: str, account: str = "controller") -> None:
        """Grants `account` the shipped outcome-reporter role in `namespace`."""
        with contextlib.suppress(kubernetes.client.ApiException):  # shared by the tests
            self.rbac().create_cluster_role(REPORTER_ROLE, _request_timeout=30)
        name = REPORTER_ROLE["metadata"]["name"]
        self._bind(namespace, f"{name}-{account}", "ClusterRole", name, account)
        self._await_allowed(namespace, account, REPORTER_ROLE["rules"][0])

    def _await_allowed(self, namespace: str, account: str, rule: dict[str, Any]) -> None:
        """Waits until the API server's RBAC cache has seen a new binding: the
        authorizer reads bindings from an informer, so a grant made a moment ago
        can still be denied, more so on a loaded machine."""
        review = {
            "spec": {
                "user": f"system:serviceaccount:{self.callers_ns}:{account}",
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{self.callers_ns}"],
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": rule["verbs"][0],
                    "group": rule["apiGroups"][0],
                    "resource": rule["resources"][0],
                },
            }
        }
        authz = kubernetes.client.AuthorizationV1Api(self.cluster.api_client())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            reply = authz.create_subject_access_review(review, _request_timeout=30)
            if reply.status.allowed:
                return
            time.sleep(0.05)
        raise AssertionError(f"binding of {account} in {namespace} never took effect")

    def _bind(self, namespace: str, name: str, kind: str, role: str, account: str) -> None:
        binding = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": self.callers_ns}],
        }
        try:
            self.rbac().create_namespaced_role_binding(namespace, binding, _request_timeout=30)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:  # bound already (tests of one module share the world)
                raise

    def reviews_since(self, since: datetime.datetime, at_least: int = 0) -> int:
        """SubjectAccessReviews the server sent since `since` (waits for `at_least`)."""

        def recent(event: dict[str, Any]) -> bool:
            received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"])
            resource = event.get("objectRef", {}).get("resource")
            return resource == "subjectaccessreviews" and received >= since

        self.cluster.wait_for_audit(recent, user=SERVER_USER, count=at_least)
        time.sleep(0.3)  # events trail their answers: let a surplus show
        return len(self.cluster.wait_for_audit(recent, user=SERVER_USER, count=at_least))


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _apply_server_rbac(cluster: KubeCluster) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(cluster.api_client())
    role, binding = AUTH_RBAC
    for create, body in (
        (rbac.create_cluster_role, role),
        (rbac.create_cluster_role_binding, binding),
    ):
        try:
            create(body, _request_timeout=30)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise


@pytest.fixture(scope="module")
def world(kube_cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> World:
    suffix = secrets.token_hex(3)
    core = kubernetes.client.CoreV1Api(kube_cluster.api_client())
    team_a, team_b, callers = f"team-a-{suffix}", f"team-b-{suffix}", f"remediation-{suffix}"
    for name in (team_a, team_b):
        ensure_namespace(core, name)
    _apply_server_rbac(kube_cluster)
    token_file = tmp_path_factory.mktemp("server") / "token"
    token_file.write_text(
        kube_cluster.service_account_token(SERVER_ACCOUNT["namespace"], SERVER_ACCOUNT["name"])
    )
    world = World(
        cluster=kube_cluster,
        team_a=team_a,
        team_b=team_b,
        callers_ns=callers,
        caller_token=kube_cluster.service_account_token(callers, "controller"),
        caller_user=f"system:serviceaccount:{callers}:controller",
        stranger_token=kube_cluster.service_account_token(callers, "stranger"),
        server_token_file=token_file,
        caller_b_token=kube_cluster.service_account_token(callers, "controller-b"),
        caller_b_user=f"system:serviceaccount:{callers}:controller-b",
    )
    world.bind_reader(team_a)
    world.bind_reader(team_b, account="controller-b")
    return world


def analyze(namespace: str) -> service_pb2.AnalyzeIncidentRequest:
    request = load_analyze_request(str(ROOT / "examples" / "oomkilled.json"))
    request.incident.remediation_id = f"rr-authz-{secrets.token_hex(6)}"
    request.incident.signal.namespace = namespace
    return request


def stream(namespace: str) -> service_pb2.AnalyzeIncidentStreamRequest:
    return service_pb2.AnalyzeIncidentStreamRequest(incident=analyze(namespace).incident)


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


async def code_of(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        reply = await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""
    assert reply is not None
    return grpc.StatusCode.OK, ""


async def stream_code(srv: RunningServer, namespace: str, token: str) -> tuple[Any, str]:
    async def drain() -> list[Any]:
        call = srv.stub.AnalyzeIncidentStream(stream(namespace), metadata=bearer(token), timeout=30)
        return [frame async for frame in call]

    return await code_of(drain())
