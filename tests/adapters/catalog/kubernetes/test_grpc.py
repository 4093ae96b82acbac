"""The real gRPC server over a catalog of RemediationWorkflow resources read
from the real API server: readiness waits for the first read, a model's
search and final answer and ValidateWorkflowParameters use the resources'
schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, struct_pb2
from grpc_health.v1 import health_pb2

from hapi.v1 import validation_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.transport.server import SERVICE_NAME
from tests.adapters.catalog.kubernetes.conftest import open_catalog
from tests.domain.policy.test_grpc import request
from tests.fakes.kube_catalog import CatalogResources, eventually
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, last_tool_result
from tests.helpers.grpc_server import RunningServer, running_server
from tests.helpers.premises import premises_not_under_test

GOOD = {
    "TARGET_RESOURCE_NAMESPACE": "payments",
    "TARGET_RESOURCE_NAME": "payment-api",
    "MEMORY_LIMIT_NEW": "1Gi",
}
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def answer(parameters: dict[str, Any]) -> Step:
    return Step.text(
        json.dumps(
            {
                "analysis_summary": "payment-api is OOMKilled",
                "root_cause_assessment": "memory limit below a steady working set",
                "rca_severity": "critical",
                "selected_workflow": {
                    "workflow_id": "raise-memory",
                    "version": "1.0.0",
                    "confidence": 0.9,
                    "rationale": "steady working set above the limit",
                    "estimated_risk": "low",
                    "parameters": parameters,
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )


async def readiness(server: RunningServer, service: str = SERVICE_NAME) -> int:
    reply = await server.health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(reply.status)


def validate(workflow_id: str, parameters: dict[str, Any]) -> Any:
    struct = struct_pb2.Struct()
    struct.update(parameters)
    return validation_pb2.ValidateWorkflowParametersRequest(
        workflow_id=workflow_id, parameters=struct
    )


async def test_analysis_and_validation_use_the_resources(
    resources: CatalogResources, kubeconfig: Path
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    search = Step.tool_calls(
        [("search_workflow_catalog", {"query": "OOMKilled critical memory limit"})]
    )
    script = [search, answer({**GOOD, "MEMORY_LIMIT_NEW": "1 gig"}), answer(GOOD)]
    async with ScriptedLLMServer("openai", script) as llm:
        provider = OpenAICompatibleProvider(
            llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
        )
        # The catalog's source is under test, not the workflow's premise (no cluster
        # objects are read): the operator's file vouches for it.
        vouched = premises_not_under_test(kubeconfig.parent, ["raise-memory"])
        async with running_server(
            catalog=open_catalog(kubeconfig, resources.namespace),
            llm=provider,
            premises_file=vouched,
        ) as server:
            await eventually(lambda: _is(readiness(server), SERVING))
            result = (await server.stub.AnalyzeIncident(request("rr-k8s-1"), timeout=20)).result

            ok = await server.stub.ValidateWorkflowParameters(validate("raise-memory", GOOD))
            bad = await server.stub.ValidateWorkflowParameters(
                validate("raise-memory", {**GOOD, "MEMORY_LIMIT_NEW": "1 gig", "EXTRA": 1})
            )
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await server.stub.ValidateWorkflowParameters(validate("not-in-cluster", GOOD))
        await provider.close()

    # The model searched the resources: their id, action type and prose.
    (found,) = json.loads(last_tool_result(llm.requests[1].json))["workflows"]
    assert found["workflow_id"] == "raise-memory"
    assert found["action_type"] == "IncreaseMemoryLimits"
    assert "Not when: Usage grows without bound" in found["description"]
    assert [p["name"] for p in found["parameters"]] == list(GOOD)
    # Its first answer broke the resource's pattern; the second one was taken.
    assert "MEMORY_LIMIT_NEW" in json.dumps(llm.requests[2].json["messages"][-1])
    assert result.selected_workflow.workflow_id == "raise-memory"
    assert json_format.MessageToDict(result.selected_workflow.parameters) == GOOD

    assert ok.validation.valid and ok.workflow_version == "1.0.0"
    assert not bad.validation.valid
    assert [e.parameter for e in bad.validation.errors] == ["MEMORY_LIMIT_NEW"]
    assert list(bad.validation.stripped_parameters) == ["EXTRA"]
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_not_ready_until_the_catalog_was_read(
    catalog_cluster: KubeCluster, tmp_path: Path
) -> None:
    # Credentials of a cluster that does not answer (a closed port): the
    # process is live, the service not ready, and the catalog unavailable.
    config = catalog_cluster.write_kubeconfig(tmp_path / "config")
    text = config.read_text().replace(catalog_cluster.url, "https://127.0.0.1:9")
    config.write_text(text)
    async with running_server(catalog=open_catalog(config, "anywhere")) as server:
        assert await readiness(server, "") == SERVING
        assert await readiness(server) == NOT_SERVING
        with pytest.raises(grpc.aio.AioRpcError) as unavailable:
            await server.stub.ValidateWorkflowParameters(validate("raise-memory", GOOD))
        assert unavailable.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "not been read from the cluster yet" in (unavailable.value.details() or "")


async def _is(value: Any, expected: int) -> bool:
    return bool(await value == expected)
