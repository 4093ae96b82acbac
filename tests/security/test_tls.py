"""TLS and mutual TLS with certificates made for the test, and rotation without restart."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import grpc
import pytest
import trustme

from hapi_grpc.security.tls import channel_credentials, server_credentials

# Each channel gets its own connection: a shared subchannel would reuse an
# earlier handshake and hide what a new client would see.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


async def _ping(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    names = context.auth_context().get("x509_subject_alternative_name", [])
    return b",".join(names)


def _write(blob: trustme.Blob, path: Path) -> str:
    # Write-then-rename, as the kubelet and cert-manager update mounted files.
    tmp = path.with_suffix(".tmp")
    blob.write_to_path(str(tmp))
    os.replace(tmp, path)
    return str(path)


class Pki:
    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.ca = trustme.CA()
        self.other_ca = trustme.CA()
        self.ca_file = _write(self.ca.cert_pem, tmp_path / "ca.pem")
        self.other_ca_file = _write(self.other_ca.cert_pem, tmp_path / "other-ca.pem")
        self.cert_file, self.key_file = self.install_server_cert(self.ca)

    def install_server_cert(self, ca: trustme.CA, key_too: bool = True) -> tuple[str, str]:
        cert = ca.issue_cert("localhost", "127.0.0.1")
        cert_file = _write(cert.cert_chain_pems[0], self.dir / "tls.crt")
        key_file = str(self.dir / "tls.key")
        if key_too:
            key_file = _write(cert.private_key_pem, self.dir / "tls.key")
        else:
            self.pending_key = cert.private_key_pem
        return cert_file, key_file

    def client_files(self, ca: trustme.CA, name: str) -> tuple[str, str]:
        cert = ca.issue_cert(f"{name}.clients.example")
        return (
            _write(cert.cert_chain_pems[0], self.dir / f"{name}.crt"),
            _write(cert.private_key_pem, self.dir / f"{name}.key"),
        )


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


@pytest.fixture
async def start_server() -> AsyncIterator[Callable[[grpc.ServerCredentials], Awaitable[str]]]:
    servers: list[grpc.aio.Server] = []

    async def start(credentials: grpc.ServerCredentials) -> str:
        server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            "test.Svc", {"Ping": grpc.unary_unary_rpc_method_handler(_ping)}
        )
        server.add_generic_rpc_handlers((handler,))
        port = server.add_secure_port("127.0.0.1:0", credentials)
        await server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield start
    for server in servers:
        await server.stop(None)


async def _call(address: str, credentials: grpc.ChannelCredentials) -> bytes:
    async with grpc.aio.secure_channel(address, credentials, options=CHANNEL_OPTIONS) as channel:
        return await channel.unary_unary("/test.Svc/Ping")(b"", timeout=5)


async def _refused(address: str, credentials: grpc.ChannelCredentials) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _call(address, credentials)
    return err.value.code()


async def test_tls_accepted_only_with_the_right_ca(pki: Pki, start_server) -> None:
    address = await start_server(server_credentials(pki.cert_file, pki.key_file))

    assert await _call(address, channel_credentials(pki.ca_file)) == b""
    assert (
        await _refused(address, channel_credentials(pki.other_ca_file))
        is grpc.StatusCode.UNAVAILABLE
    )


async def test_mutual_tls_needs_a_client_certificate_from_the_client_ca(
    pki: Pki, start_server
) -> None:
    address = await start_server(server_credentials(pki.cert_file, pki.key_file, pki.ca_file))
    good_cert, good_key = pki.client_files(pki.ca, "good")
    rogue_cert, rogue_key = pki.client_files(pki.other_ca, "rogue")

    answer = await _call(address, channel_credentials(pki.ca_file, good_cert, good_key))
    assert b"good.clients.example" in answer  # the handler sees the verified identity

    assert await _refused(address, channel_credentials(pki.ca_file)) is grpc.StatusCode.UNAVAILABLE
    rogue = channel_credentials(pki.ca_file, rogue_cert, rogue_key)
    assert await _refused(address, rogue) is grpc.StatusCode.UNAVAILABLE


async def test_certificate_rotates_without_restart(pki: Pki, start_server, caplog) -> None:
    address = await start_server(server_credentials(pki.cert_file, pki.key_file))
    assert await _call(address, channel_credentials(pki.ca_file)) == b""

    # Half-way through a rotation (new certificate, old key) the old pair stays.
    new_ca = trustme.CA()
    new_ca_file = _write(new_ca.cert_pem, pki.dir / "new-ca.pem")
    with caplog.at_level(logging.WARNING, logger="hapi_grpc.security.tls"):
        pki.install_server_cert(new_ca, key_too=False)
        for _ in range(3):
            assert await _call(address, channel_credentials(pki.ca_file)) == b""
    # Warned once, not at every handshake.
    warnings = [r for r in caplog.records if "keeping the previous certificate" in r.message]
    assert len(warnings) == 1

    _write(pki.pending_key, pki.dir / "tls.key")
    assert await _call(address, channel_credentials(new_ca_file)) == b""
    assert await _refused(address, channel_credentials(pki.ca_file)) is grpc.StatusCode.UNAVAILABLE


def test_unusable_files_fail_at_startup(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        server_credentials(str(tmp_path / "missing.crt"), pki.key_file)
    other = pki.ca.issue_cert("localhost")
    wrong_key = _write(other.private_key_pem, tmp_path / "wrong.key")
    with pytest.raises(ValueError, match="do not form a valid pair"):
        server_credentials(pki.cert_file, wrong_key)
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        channel_credentials(pki.ca_file, cert_file=pki.cert_file)
