"""TLS and bearer-token auth as configured through Settings, on the real server."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hapi.v1 import service_pb2_grpc, validation_pb2
from tests.helpers.grpc_server import running_server


def _request() -> validation_pb2.ValidateWorkflowParametersRequest:
    request = validation_pb2.ValidateWorkflowParametersRequest(
        workflow_id="cleanup-evicted-pods-v1"
    )
    request.parameters.update({})
    return request


async def test_static_token_auth_from_settings(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# operators\ns3cret-token-1\n", encoding="utf-8")
    async with running_server(
        auth_mode="static", auth_tokens_file=str(tokens), auth_static_namespaces=["*"]
    ) as srv:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(_request(), timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as wrong:
            await srv.stub.ValidateWorkflowParameters(
                _request(), timeout=10, metadata=(("authorization", "Bearer nope"),)
            )
        assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "nope" not in (wrong.value.details() or "")
        reply = await srv.stub.ValidateWorkflowParameters(
            _request(), timeout=10, metadata=(("authorization", "Bearer s3cret-token-1"),)
        )
        assert reply.workflow_id == "cleanup-evicted-pods-v1"
        # Probes need no token.
        health = await srv.health.Check(health_pb2.HealthCheckRequest(service=""))
        assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_mutual_tls_from_settings(tmp_path: Path) -> None:
    ca = trustme.CA()
    server_cert = ca.issue_cert("localhost")
    server_cert.cert_chain_pems[0].write_to_path(str(tmp_path / "server.crt"))
    server_cert.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    client = ca.issue_cert("controller")
    async with running_server(
        tls_cert_file=str(tmp_path / "server.crt"),
        tls_key_file=str(tmp_path / "server.key"),
        tls_client_ca_file=str(tmp_path / "ca.crt"),
    ) as srv:
        port = srv.address.rsplit(":", 1)[1]
        options = (("grpc.ssl_target_name_override", "localhost"),)
        good = grpc.ssl_channel_credentials(
            ca.cert_pem.bytes(),
            client.private_key_pem.bytes(),
            client.cert_chain_pems[0].bytes(),
        )
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", good, options) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            reply = await stub.ValidateWorkflowParameters(_request(), timeout=10)
            assert reply.workflow_id == "cleanup-evicted-pods-v1"
        no_client_cert = grpc.ssl_channel_credentials(ca.cert_pem.bytes())
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", no_client_cert, options) as ch:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=5
                )
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
