"""A real Kubernetes API server for tests: etcd + kube-apiserver on loopback.

`scripts/ensure_kube_apiserver.sh` (run by `make test`, or `make kube`) builds
the binaries once per machine. One cluster runs per pytest process:

    from tests.fakes.kube_cluster import kube_cluster  # in a conftest.py

    def test_something(kube_cluster: KubeCluster) -> None:
        core = kubernetes.client.CoreV1Api(kube_cluster.api_client())

There is no controller-manager, scheduler or kubelet: nothing creates Pods for
a Deployment, nothing overwrites a status a test wrote, a deleted namespace
stays Terminating (use fresh names). The admin token is in `system:masters`;
`service_account_token()` mints a real, RBAC-bound token. Every request the
server answers is in the audit log (`audit_events()`), with verb, URI and user.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
KUBE_VERSION = "v1.37.2"
BUILD_COMMAND = "`make kube` (or `./scripts/ensure_kube_apiserver.sh`)"
READY_TIMEOUT_SECONDS = 90.0  # ~5-8 s when idle; the machine may be busy

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],  # one event per request, once answered
    "rules": [{"level": "Metadata"}],
}


def _binary(env_name: str, name: str, cached: str) -> Path:
    """An explicit path, else the link the build script makes, else the cache."""
    override = os.environ.get(env_name)
    if override:
        return Path(override)
    linked = ROOT / ".tools" / "kube" / name
    if linked.exists():
        return linked
    cache = Path(os.environ.get("HAPI_TOOLS_CACHE", Path.home() / ".cache" / "hapi-grpc"))
    found = sorted(cache.glob(cached))
    return found[-1] if found else cache / cached


def binaries() -> tuple[Path, Path]:
    """(kube-apiserver, etcd); fails the test run (never skips) when absent."""
    apiserver = _binary("HAPI_KUBE_APISERVER", "kube-apiserver", f"kube-apiserver-{KUBE_VERSION}")
    etcd = _binary("HAPI_ETCD", "etcd", "etcd-*/usr/bin/etcd")
    missing = [str(p) for p in (apiserver, etcd) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(
            f"test cluster binaries missing ({', '.join(missing)}): build them once with "
            f"{BUILD_COMMAND} (first build ~17 min, cached per machine)",
            pytrace=False,
        )
    return apiserver, etcd


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class KubeCluster:
    """Connection facts of a running test cluster."""

    url: str
    ca_file: Path
    admin_token: str
    workdir: Path
    audit_log: Path
    version: str = KUBE_VERSION
    _clients: list[kubernetes.client.ApiClient] = field(default_factory=list, repr=False)
    # Set by `running_cluster`: stop and start kube-apiserver alone (etcd keeps running).
    _apiserver: dict[str, Callable[[], None]] = field(default_factory=dict, repr=False)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM); its port refuses connections until started."""
        self._apiserver["stop"]()

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port and wait until it is ready."""
        self._apiserver["start"]()

    def configuration(self, token: str | None = None) -> kubernetes.client.Configuration:
        config = kubernetes.client.Configuration()
        config.host = self.url
        config.ssl_ca_cert = str(self.ca_file)
        config.verify_ssl = True
        config.api_key = {"authorization": token or self.admin_token}
        config.api_key_prefix = {"authorization": "Bearer"}
        return config

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A client of the official library; admin unless a token is given."""
        client = kubernetes.client.ApiClient(self.configuration(token))
        self._clients.append(client)
        return client

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(
        self, method: str, path: str, *, token: str | None = None, body: Any = None
    ) -> tuple[int, bytes]:
        """One raw HTTPS request; (status, body) whatever the status."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token or self.admin_token}")
        if data is not None:
            content = "application/merge-patch+json" if method == "PATCH" else "application/json"
            req.add_header("Content-Type", content)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def service_account_token(
        self, namespace: str, name: str, *, expiration_seconds: int = 3600, create: bool = True
    ) -> str:
        """A bound token for namespace/name via the TokenRequest API."""
        core = kubernetes.client.CoreV1Api(self.api_client())
        if create:
            ensure_namespace(core, namespace)
            with contextlib.suppress(kubernetes.client.ApiException):
                core.create_namespaced_service_account(
                    namespace, {"metadata": {"name": name}}, _request_timeout=30
                )
        request = kubernetes.client.AuthenticationV1TokenRequest(
            spec=kubernetes.client.V1TokenRequestSpec(
                audiences=[], expiration_seconds=expiration_seconds
            )
        )
        answer = core.create_namespaced_service_account_token(
            name, namespace, request, _request_timeout=30
        )
        return str(answer.status.token)

    def write_kubeconfig(self, path: Path, token: str | None = None) -> Path:
        """A kubeconfig file for this cluster (current context set)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {"server": self.url, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "test", "user": {"token": token or self.admin_token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        return path

    def audit_events(self, *, user: str | None = None) -> list[dict[str, Any]]:
        """Requests the server has answered, oldest first (optionally by username)."""
        if not self.audit_log.exists():
            return []
        events = []
        for line in self.audit_log.read_text(encoding="utf-8").splitlines():
            if line.strip():
                event = json.loads(line)
                if user is None or event.get("user", {}).get("username") == user:
                    events.append(event)
        return events

    def wait_for_audit(
        self,
        predicate: Callable[[dict[str, Any]], bool] = lambda event: True,
        *,
        user: str | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[dict[str, Any]]:
        """The audit events (of `user`) matching `predicate` once there are `count`
        of them: an event is written as its response completes, so it may trail
        the answer the client already has."""
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.audit_events(user=user) if predicate(e)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def close_clients(self) -> None:
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        self._clients.clear()


def ensure_namespace(core: kubernetes.client.CoreV1Api, name: str) -> None:
    try:
        core.create_namespace({"metadata": {"name": name}}, _request_timeout=30)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise


def _write_keys(directory: Path) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = directory / "sa.key"
    public = directory / "sa.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_ready(
    cluster: KubeCluster, apiserver: subprocess.Popen[bytes], etcd: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    last = "no answer yet"
    while time.monotonic() < deadline:
        for name, process in (("kube-apiserver", apiserver), ("etcd", etcd)):
            if process.poll() is not None:
                log = cluster.workdir / f"{name}.log"
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{_tail(log)}")
        if cluster.ca_file.exists():
            try:
                status, body = cluster.request("GET", "/readyz")
                if status == 200:
                    return
                last = f"/readyz {status}: {body[:200]!r}"
            except OSError as exc:
                last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(
        f"kube-apiserver not ready after {READY_TIMEOUT_SECONDS:.0f} s ({last}):\n"
        f"{_tail(cluster.workdir / 'kube-apiserver.log')}"
    )


@contextlib.contextmanager
def running_cluster() -> Iterator[KubeCluster]:
    """Starts etcd and kube-apiserver in a fresh temp dir; stops and removes them."""
    apiserver_bin, etcd_bin = binaries()
    # /dev/shm when present: etcd's WAL fsyncs and preallocates ~120 MB.
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    workdir = Path(tempfile.mkdtemp(prefix="hapi-kube-", dir=base))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        client_port, peer_port, secure_port = free_port(), free_port(), free_port()
        etcd_env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD_")}
        peer = f"http://127.0.0.1:{peer_port}"
        etcd_url = f"http://127.0.0.1:{client_port}"
        with (workdir / "etcd.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [
                        str(etcd_bin),
                        "--name=test",
                        f"--data-dir={workdir / 'etcd'}",
                        f"--listen-client-urls={etcd_url}",
                        f"--advertise-client-urls={etcd_url}",
                        f"--listen-peer-urls={peer}",
                        f"--initial-advertise-peer-urls={peer}",
                        f"--initial-cluster=test={peer}",
                        "--log-level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=etcd_env,
                    start_new_session=True,
                )
            )
        admin_token = secrets.token_urlsafe(32)
        tokens = workdir / "tokens.csv"
        tokens.write_text(f'{admin_token},test-admin,test-admin,"system:masters"\n')
        sa_key, sa_pub = _write_keys(workdir)
        policy = workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        cert_dir = workdir / "certs"
        cluster = KubeCluster(
            url=f"https://127.0.0.1:{secure_port}",
            ca_file=cert_dir / "apiserver.crt",
            admin_token=admin_token,
            workdir=workdir,
            audit_log=workdir / "audit.log",
        )
        apiserver_command = [
            str(apiserver_bin),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={secure_port}",
            f"--cert-dir={cert_dir}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={sa_pub}",
            f"--service-account-signing-key-file={sa_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            # The endpoint reconciler refuses a loopback address.
            "--endpoint-reconciler-type=none",
            # No controller-manager creates `default` ServiceAccounts.
            "--disable-admission-plugins=ServiceAccount",
            f"--audit-policy-file={policy}",
            f"--audit-log-path={cluster.audit_log}",
            "--audit-log-format=json",
            "--v=0",
        ]

        def start_apiserver() -> None:
            with (workdir / "kube-apiserver.log").open("ab") as log:
                process = subprocess.Popen(
                    apiserver_command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if len(processes) > 1:
                processes[1] = process
            else:
                processes.append(process)
            _wait_ready(cluster, processes[1], processes[0])

        cluster._apiserver.update(start=start_apiserver, stop=lambda: _stop(processes[1]))
        start_apiserver()
        try:
            yield cluster
        finally:
            cluster.close_clients()
    finally:
        for process in reversed(processes):
            _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


# One cluster per process, shared by every conftest that imports the fixture.
_shared_lock = threading.Lock()
_shared: dict[str, Any] = {"users": 0, "cluster": None, "context": None}


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[KubeCluster]:
    with _shared_lock:
        if _shared["cluster"] is None:
            context = running_cluster()
            _shared["cluster"] = context.__enter__()
            _shared["context"] = context
        _shared["users"] += 1
    try:
        yield _shared["cluster"]
    finally:
        with _shared_lock:
            _shared["users"] -= 1
            if _shared["users"] == 0:
                context = _shared["context"]
                _shared.update(cluster=None, context=None)
                context.__exit__(None, None, None)
