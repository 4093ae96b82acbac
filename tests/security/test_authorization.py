"""Who may investigate which namespace, through the real grpc.aio server.

Callers hold real service-account tokens from the test kube-apiserver, which
answers the server's TokenReviews and SubjectAccessReviews itself, with the
RBAC of deploy/auth-rbac.yaml for the server's own account.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest
import yaml

from hapi.v1 import service_pb2, tools_pb2, validation_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.client import load_analyze_request
from hapi_grpc.security.auth import Identity
from hapi_grpc.security.authorization import ResourceCheck, SubjectAccessReviewAuthorizer
from tests.fakes.kube_cluster import KubeCluster, ensure_namespace, kube_cluster
from tests.fakes.kube_toolset import open_reader, toolset_source
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import RunningServer, running_server

__all__ = ["kube_cluster"]

ROOT = Path(__file__).resolve().parents[2]
AUTH_RBAC = list(yaml.safe_load_all((ROOT / "deploy" / "auth-rbac.yaml").read_text()))
(SERVER_ACCOUNT,) = AUTH_RBAC[1]["subjects"]
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

    def settings(self, **overrides: Any) -> dict[str, Any]:
        return {
            "auth_mode": "tokenreview",
            "tokenreview_api_url": self.cluster.url,
            "tokenreview_ca_file": str(self.cluster.ca_file),
            "tokenreview_token_file": str(self.server_token_file),
            "auth_allowed_callers": [self.caller_user],
            **overrides,
        }

    def rbac(self) -> kubernetes.client.RbacAuthorizationV1Api:
        return kubernetes.client.RbacAuthorizationV1Api(self.cluster.api_client())

    def bind_reader(self, namespace: str, name: str = "incident-reader") -> None:
        """Lets the caller `get pods` in `namespace` (and nothing else)."""
        rbac = self.rbac()
        role = {
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
        binding = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [
                {"kind": "ServiceAccount", "name": "controller", "namespace": self.callers_ns}
            ],
        }
        with contextlib.suppress(kubernetes.client.ApiException):
            rbac.create_namespaced_role(namespace, role, _request_timeout=30)
        rbac.create_namespaced_role_binding(namespace, binding, _request_timeout=30)

    def reviews_since(self, since: datetime.datetime, at_least: int = 0) -> int:
        """SubjectAccessReviews the server sent since `since` (waits for `at_least`)."""

        def recent(event: dict[str, Any]) -> bool:
            received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"])
            resource = event.get("objectRef", {}).get("resource")
            return resource == "subjectaccessreviews" and received >= since

        self.cluster.wait_for_audit(recent, user=SERVER_USER, count=at_least)
        time.sleep(0.3)  # events trail their answers: let a surplus show
        return len(self.cluster.wait_for_audit(recent, user=SERVER_USER, count=at_least))


def _now() -> datetime.datetime:
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
    )
    world.bind_reader(team_a)
    return world


def _analyze(namespace: str) -> service_pb2.AnalyzeIncidentRequest:
    request = load_analyze_request(str(ROOT / "examples" / "oomkilled.json"))
    request.incident.remediation_id = f"rr-authz-{secrets.token_hex(6)}"
    request.incident.signal.namespace = namespace
    return request


def _stream(namespace: str) -> service_pb2.AnalyzeIncidentStreamRequest:
    return service_pb2.AnalyzeIncidentStreamRequest(incident=_analyze(namespace).incident)


def _bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


async def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        reply = await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""
    assert reply is not None
    return grpc.StatusCode.OK, ""


async def _stream_code(srv: RunningServer, namespace: str, token: str) -> tuple[Any, str]:
    async def drain() -> list[Any]:
        call = srv.stub.AnalyzeIncidentStream(
            _stream(namespace), metadata=_bearer(token), timeout=30
        )
        return [frame async for frame in call]

    return await _code(drain())


async def test_a_caller_investigates_where_it_may_read_and_nowhere_else(world: World) -> None:
    async with running_server(**world.settings()) as srv:
        token = world.caller_token
        reply = await srv.stub.AnalyzeIncident(
            _analyze(world.team_a), metadata=_bearer(token), timeout=30
        )
        assert reply.result.selected_workflow.workflow_id == "oomkill-increase-memory-v1"
        assert (await _stream_code(srv, world.team_a, token))[0] == grpc.StatusCode.OK

        code, details = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_b), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert world.team_b in details
        code, details = await _stream_code(srv, world.team_b, token)
        assert code == grpc.StatusCode.PERMISSION_DENIED and world.team_b in details
        # A cluster-scoped incident needs the permission in every namespace.
        code, details = await _code(
            srv.stub.AnalyzeIncident(_analyze(""), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED and "cluster-scoped" in details

        # Validation reads no cluster state: any listed caller may use it.
        request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id="x")
        code, _ = await _code(
            srv.stub.ValidateWorkflowParameters(request, metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.NOT_FOUND


async def test_unlisted_and_unknown_callers_are_refused(world: World) -> None:
    async with running_server(**world.settings()) as srv:
        code, details = await _code(
            srv.stub.AnalyzeIncident(
                _analyze(world.team_a), metadata=_bearer(world.stranger_token), timeout=30
            )
        )
        # A valid token of the cluster, but not a listed caller.
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert f"{world.callers_ns}:stranger" in details
        code, _ = await _code(
            srv.stub.AnalyzeIncident(
                _analyze(world.team_a), metadata=_bearer("not-a-token"), timeout=30
            )
        )
        assert code == grpc.StatusCode.UNAUTHENTICATED
        code, _ = await _code(srv.stub.AnalyzeIncident(_analyze(world.team_a), timeout=30))
        assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_the_verb_and_resource_are_configurable(world: World) -> None:
    # The caller may get pods in team A, but not list deployments there.
    async with running_server(
        **world.settings(authz_verb="list", authz_resource="deployments.apps")
    ) as srv:
        code, details = await _code(
            srv.stub.AnalyzeIncident(
                _analyze(world.team_a), metadata=_bearer(world.caller_token), timeout=30
            )
        )
    assert code == grpc.StatusCode.PERMISSION_DENIED and world.team_a in details


async def test_answers_are_cached_briefly_and_shared(world: World) -> None:
    ttl = 4.0
    namespace = f"team-c-{secrets.token_hex(3)}"
    ensure_namespace(kubernetes.client.CoreV1Api(world.cluster.api_client()), namespace)
    world.bind_reader(namespace)
    token = world.caller_token
    async with running_server(**world.settings(authz_cache_seconds=ttl)) as srv:
        since, started = _now(), time.monotonic()
        # An alert storm: concurrent calls for one namespace share one review.
        replies = await asyncio.gather(
            *(
                _code(
                    srv.stub.AnalyzeIncident(
                        _analyze(namespace), metadata=_bearer(token), timeout=30
                    )
                )
                for _ in range(10)
            )
        )
        assert {code for code, _ in replies} == {grpc.StatusCode.OK}
        assert world.reviews_since(since, at_least=1) == 1

        # Revoked: the cached answer stands until it expires, then the refusal.
        world.rbac().delete_namespaced_role_binding(
            "incident-reader", namespace, _request_timeout=30
        )
        code, _ = await _code(
            srv.stub.AnalyzeIncident(_analyze(namespace), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        assert time.monotonic() - started < ttl, "too slow to observe the cache"
        await asyncio.sleep(ttl - (time.monotonic() - started) + 0.2)
        code, details = await _code(
            srv.stub.AnalyzeIncident(_analyze(namespace), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED and namespace in details
        assert world.reviews_since(since, at_least=2) == 2


async def test_the_cache_is_bounded(world: World) -> None:
    authorizer = SubjectAccessReviewAuthorizer(
        world.cluster.url,
        str(world.cluster.ca_file),
        str(world.server_token_file),
        ResourceCheck(),
        cache_ttl=300,
        max_cache_entries=2,
    )
    caller = Identity(world.caller_user, ("system:serviceaccounts",))
    try:
        names = [world.team_a, world.team_b, "default"]
        assert [await authorizer.allowed(caller, n) for n in names] == [True, False, False]
        assert len(authorizer._cache) == 2
        since = _now()
        assert await authorizer.allowed(caller, "default") is False  # still cached
        assert await authorizer.allowed(caller, world.team_a) is True  # evicted: asked again
        assert world.reviews_since(since, at_least=1) == 1
    finally:
        await authorizer.close()


def _probe_pods(world: World) -> None:
    core = kubernetes.client.CoreV1Api(world.cluster.api_client())
    pod = {
        "metadata": {"name": "probe", "labels": {"app": "probe"}},
        "spec": {"containers": [{"name": "main", "image": "registry.invalid/probe:1"}]},
    }
    for namespace in (world.team_a, world.team_b):
        with contextlib.suppress(kubernetes.client.ApiException):
            core.create_namespaced_pod(namespace, pod, _request_timeout=30)


async def _tool_reads(world: World, tmp_path: Path, **settings: Any) -> dict[str, Any]:
    """kubernetes_get of the probe pod in team A and team B, asked by the model
    during an investigation of team A; the records by namespace read."""
    _probe_pods(world)
    reader = await open_reader(world.cluster, tmp_path / "kubeconfig")
    asks = [
        ("kubernetes_get", {"kind": "Pod", "namespace": ns, "name": "probe"})
        for ns in (world.team_b, world.team_a)
    ]
    script = [Step.tool_calls(asks)] + [Step.text("{}")] * 4
    metadata = _bearer(world.caller_token) if settings.get("auth_mode") else None
    try:
        async with ScriptedLLMServer("openai", script) as model:
            llm = OpenAICompatibleProvider(model.base_url, "m", "sk-test-0000000000")
            async with running_server(
                llm=llm, toolsets=[toolset_source(reader)], **settings
            ) as srv:
                reply = await srv.stub.AnalyzeIncident(
                    _analyze(world.team_a), metadata=metadata, timeout=60
                )
            await llm.close()
    finally:
        await reader.close()
    return {
        c.kubernetes_get.namespace: c for c in reply.result.tool_calls if c.name == "kubernetes_get"
    }


async def test_an_authorized_investigation_reads_only_its_namespace(
    world: World, tmp_path: Path
) -> None:
    reads = await _tool_reads(world, tmp_path, **world.settings())
    assert reads[world.team_a].status == tools_pb2.TOOL_CALL_STATUS_SUCCESS
    assert '"probe"' in reads[world.team_a].result
    refused = reads[world.team_b]
    assert refused.status != tools_pb2.TOOL_CALL_STATUS_SUCCESS
    assert f"may read only namespace '{world.team_a}'" in refused.result
    assert "registry.invalid" not in refused.result

    # Without authorization the same model reads both (what the bound prevents).
    open_reads = await _tool_reads(world, tmp_path)
    assert open_reads[world.team_b].status == tools_pb2.TOOL_CALL_STATUS_SUCCESS


# --- The API server unreachable -----------------------------------------------


class Relay:
    """A TCP relay to the API server that can stop answering or go away."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("https://").rsplit(":", 1)
        self._upstream = (host, int(port))
        self.mode = "forward"  # or "silent": accept and never answer
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"https://127.0.0.1:{port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self.mode == "silent":
            await reader.read()  # until the client gives up
            return
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        self._writers.add(up_writer)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        """Drop every open connection (pooled ones too)."""
        for writer in self._writers:
            writer.close()
        self._writers.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            self._server = None


@pytest.fixture
async def relay(world: World) -> AsyncIterator[Relay]:
    relay = Relay(world.cluster.url)
    yield relay
    await relay.close()


async def test_api_server_unreachable_fails_closed_with_unavailable(
    world: World, relay: Relay
) -> None:
    url = await relay.start()
    async with running_server(
        **world.settings(tokenreview_api_url=url, authz_cache_seconds=0)
    ) as srv:
        token = world.caller_token
        code, _ = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_a), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        # The token's review is cached; the namespace check is not (TTL 0).
        await relay.close()
        code, details = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_a), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.UNAVAILABLE, details
        assert "Kubernetes API" in details
        code, _ = await _stream_code(srv, world.team_a, token)
        assert code == grpc.StatusCode.UNAVAILABLE
        # A caller whose token was never reviewed: UNAVAILABLE too, not UNAUTHENTICATED.
        code, _ = await _code(
            srv.stub.AnalyzeIncident(
                _analyze(world.team_a), metadata=_bearer(world.stranger_token), timeout=30
            )
        )
        assert code == grpc.StatusCode.UNAVAILABLE


async def test_a_silent_api_server_is_bounded_by_timeout_and_deadline(
    world: World, relay: Relay
) -> None:
    url = await relay.start()
    settings = world.settings(
        tokenreview_api_url=url, authz_cache_seconds=0, authz_timeout_seconds=0.5
    )
    async with running_server(**settings) as srv:
        token = world.caller_token
        code, _ = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_a), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        relay.mode = "silent"
        relay.cut()
        started = time.monotonic()
        code, _ = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_a), metadata=_bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.UNAVAILABLE
        assert time.monotonic() - started < 2.0  # the review's own timeout
        started = time.monotonic()
        code, _ = await _code(
            srv.stub.AnalyzeIncident(_analyze(world.team_a), metadata=_bearer(token), timeout=0.3)
        )
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 1.0


# --- Static tokens --------------------------------------------------------------


@pytest.fixture
def tokens_file(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "tokens"
    path.write_text("static-caller-token-7d1e\n", encoding="utf-8")
    yield str(path)


async def test_static_token_callers_get_an_explicit_namespace_list(tokens_file: str) -> None:
    token = "static-caller-token-7d1e"
    async with running_server(
        auth_mode="static", auth_tokens_file=tokens_file, auth_static_namespaces=["team-*", "ops"]
    ) as srv:
        for namespace in ("team-payments", "ops"):
            code, _ = await _code(
                srv.stub.AnalyzeIncident(_analyze(namespace), metadata=_bearer(token), timeout=30)
            )
            assert code == grpc.StatusCode.OK, namespace
        for namespace in ("payments", "ops-2", ""):
            code, details = await _code(
                srv.stub.AnalyzeIncident(_analyze(namespace), metadata=_bearer(token), timeout=30)
            )
            assert code == grpc.StatusCode.PERMISSION_DENIED, namespace
            assert (namespace or "cluster-scoped") in details
        code, _ = await _stream_code(srv, "payments", token)
        assert code == grpc.StatusCode.PERMISSION_DENIED
