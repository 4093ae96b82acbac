"""Who may investigate which namespace, through the real grpc.aio server.

Callers hold real service-account tokens from the test kube-apiserver, which
answers the server's TokenReviews and SubjectAccessReviews itself (see
kube_world.py); static-token callers get an explicit namespace list.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest

from hapi.v1 import tools_pb2, validation_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.security.auth import Identity
from hapi_grpc.security.authorization import ResourceCheck, SubjectAccessReviewAuthorizer
from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.fakes.kube_cluster import ensure_namespace
from tests.fakes.kube_toolset import open_reader, toolset_source
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server
from tests.security.kube_world import (
    World,
    analyze,
    bearer,
    code_of,
    now,
    stream_code,
)


async def test_a_caller_investigates_where_it_may_read_and_nowhere_else(world: World) -> None:
    # Who may investigate is under test, not the workflows' premises.
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), **world.settings()
    ) as srv:
        token = world.caller_token
        reply = await srv.stub.AnalyzeIncident(
            analyze(world.team_a), metadata=bearer(token), timeout=30
        )
        assert reply.result.selected_workflow.workflow_id == "oomkill-scale-down-v1"
        assert (await stream_code(srv, world.team_a, token))[0] == grpc.StatusCode.OK

        code, details = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_b), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert world.team_b in details
        code, details = await stream_code(srv, world.team_b, token)
        assert code == grpc.StatusCode.PERMISSION_DENIED and world.team_b in details
        # A cluster-scoped incident needs the permission in every namespace.
        code, details = await code_of(
            srv.stub.AnalyzeIncident(analyze(""), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED and "cluster-scoped" in details

        # Validation reads no cluster state: any listed caller may use it.
        request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id="x")
        code, _ = await code_of(
            srv.stub.ValidateWorkflowParameters(request, metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.NOT_FOUND


async def test_unlisted_and_unknown_callers_are_refused(world: World) -> None:
    async with running_server(**world.settings()) as srv:
        code, details = await code_of(
            srv.stub.AnalyzeIncident(
                analyze(world.team_a), metadata=bearer(world.stranger_token), timeout=30
            )
        )
        # A valid token of the cluster, but not a listed caller.
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert f"{world.callers_ns}:stranger" in details
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(
                analyze(world.team_a), metadata=bearer("not-a-token"), timeout=30
            )
        )
        assert code == grpc.StatusCode.UNAUTHENTICATED
        code, _ = await code_of(srv.stub.AnalyzeIncident(analyze(world.team_a), timeout=30))
        assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_the_verb_and_resource_are_configurable(world: World) -> None:
    # The caller may get pods in team A, but not list deployments there.
    async with running_server(
        **world.settings(authz_verb="list", authz_resource="deployments.apps")
    ) as srv:
        code, details = await code_of(
            srv.stub.AnalyzeIncident(
                analyze(world.team_a), metadata=bearer(world.caller_token), timeout=30
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
        since, started = now(), time.monotonic()
        # An alert storm: concurrent calls for one namespace share one review.
        replies = await asyncio.gather(
            *(
                code_of(
                    srv.stub.AnalyzeIncident(analyze(namespace), metadata=bearer(token), timeout=30)
                )
                for _ in range(10)
            )
        )
        assert {code for code, _ in replies} == {grpc.StatusCode.OK}
        assert world.reviews_since(since, at_least=1) == 1

        # Revoked: the cached answer stands until it expires, then the refusal.
        world.rbac().delete_namespaced_role_binding(
            "incident-reader-controller", namespace, _request_timeout=30
        )
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(analyze(namespace), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        assert time.monotonic() - started < ttl, "too slow to observe the cache"
        await asyncio.sleep(ttl - (time.monotonic() - started) + 0.2)
        code, details = await code_of(
            srv.stub.AnalyzeIncident(analyze(namespace), metadata=bearer(token), timeout=30)
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
        since = now()
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
    metadata = bearer(world.caller_token) if settings.get("auth_mode") else None
    try:
        async with ScriptedLLMServer("openai", script) as model:
            llm = OpenAICompatibleProvider(model.base_url, "m", "sk-test-0000000000")
            async with running_server(
                llm=llm, toolsets=[toolset_source(reader)], **settings
            ) as srv:
                reply = await srv.stub.AnalyzeIncident(
                    analyze(world.team_a), metadata=metadata, timeout=60
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
            code, _ = await code_of(
                srv.stub.AnalyzeIncident(analyze(namespace), metadata=bearer(token), timeout=30)
            )
            assert code == grpc.StatusCode.OK, namespace
        for namespace in ("payments", "ops-2", ""):
            code, details = await code_of(
                srv.stub.AnalyzeIncident(analyze(namespace), metadata=bearer(token), timeout=30)
            )
            assert code == grpc.StatusCode.PERMISSION_DENIED, namespace
            assert (namespace or "cluster-scoped") in details
        code, _ = await stream_code(srv, "payments", token)
        assert code == grpc.StatusCode.PERMISSION_DENIED
