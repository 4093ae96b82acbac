"""TLS and mutual TLS credentials for the gRPC server and its clients.

Design notes: docs/internals.md (`security/tls.py`).
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass

import grpc

log = logging.getLogger(__name__)


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ValueError(f"cannot read the {what} file {path!r}: {exc.strerror}") from None
    if not data.strip():
        raise ValueError(f"the {what} file {path!r} is empty")
    return data


def _check_pair(cert_file: str, key_file: str) -> None:
    """Raises ValueError unless the key matches the certificate (both PEM)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"certificate {cert_file!r} and key {key_file!r} do not form a valid pair"
        ) from exc


def _stamp(paths: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    stamps = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise ValueError(f"cannot read the TLS file {path!r}: {exc.strerror}") from None
        stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamps)


@dataclass
class _Loaded:
    stamp: tuple[tuple[int, int, int], ...]
    config: grpc.ServerCertificateConfiguration


class _ReloadingCertificates:
    """Builds certificate configurations from files; reloads when they change."""

    def __init__(self, cert_file: str, key_file: str, client_ca_file: str | None) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._client_ca_file = client_ca_file
        self._paths = tuple(p for p in (cert_file, key_file, client_ca_file) if p)
        self._lock = threading.Lock()  # the fetcher runs on gRPC's threads
        self._rejected: object = None
        self.current = self._load()

    def _load(self) -> _Loaded:
        stamp = _stamp(self._paths)
        key = _read(self._key_file, "TLS key")
        cert = _read(self._cert_file, "TLS certificate")
        _check_pair(self._cert_file, self._key_file)
        client_ca = _read(self._client_ca_file, "client CA") if self._client_ca_file else None
        # The pair check reads the files again: only a load during which
        # nothing changed is known to be the pair that was checked.
        if _stamp(self._paths) != stamp:
            raise ValueError("the TLS files changed while being loaded")
        config = grpc.ssl_server_certificate_configuration(
            [(key, cert)], root_certificates=client_ca
        )
        return _Loaded(stamp, config)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """New configuration when the files changed and are valid, else None (keep).

        Files found unusable are not looked at again (nor warned about) until
        they change again, so a stuck rotation costs one stat per handshake.
        """
        with self._lock:
            try:
                stamp: object = _stamp(self._paths)
            except ValueError as exc:
                stamp = exc.args  # a missing file: same message, same state
                if stamp != self._rejected:
                    self._reject(stamp, exc)
                return None
            if stamp in (self.current.stamp, self._rejected):
                return None
            try:
                loaded = self._load()
            except (OSError, ValueError) as exc:
                self._reject(stamp, exc)
                return None
            self.current = loaded
            log.info("TLS certificate reloaded")
            return loaded.config

    def _reject(self, state: object, exc: Exception) -> None:
        # Mid-rotation or broken files: keep serving the previous pair.
        self._rejected = state
        log.warning(
            "TLS files changed but cannot be loaded yet; keeping the previous certificate",
            extra={"error": str(exc)},
        )


def server_credentials(
    cert_file: str,
    key_file: str,
    client_ca_file: str | None = None,
) -> grpc.ServerCredentials:
    """Server credentials from PEM files, reloaded when the files change.

    With `client_ca_file`, every client must present a certificate signed by
    that CA (mutual TLS). Raises ValueError at once for unreadable files or a
    key that does not match the certificate.
    """
    certificates = _ReloadingCertificates(cert_file, key_file, client_ca_file)
    return grpc.dynamic_ssl_server_credentials(
        certificates.current.config,
        certificates.fetch,
        require_client_authentication=bool(client_ca_file),
    )


def channel_credentials(
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> grpc.ChannelCredentials:
    """Client credentials: trust `ca_file` (system roots when None), optionally present a cert."""
    if (cert_file is None) != (key_file is None):
        raise ValueError("a client certificate needs both cert_file and key_file")
    root = _read(ca_file, "CA") if ca_file else None
    if cert_file and key_file:
        _check_pair(cert_file, key_file)
        return grpc.ssl_channel_credentials(
            root_certificates=root,
            private_key=_read(key_file, "TLS key"),
            certificate_chain=_read(cert_file, "TLS certificate"),
        )
    return grpc.ssl_channel_credentials(root_certificates=root)
