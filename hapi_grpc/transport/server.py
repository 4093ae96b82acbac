"""The grpc.aio server: the servicer over the application it is handed, health,
reflection, interceptors, shutdown. It builds no application service itself:
`app.py` builds them and hands them over.

Design notes: docs/internals.md (`transport/server.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from hapi.v1 import service_pb2, service_pb2_grpc
from hapi.v1.service_pb2 import AnalyzeIncidentStreamResponse as StreamResponse
from hapi_grpc.application.service import Application
from hapi_grpc.config import Settings
from hapi_grpc.security.authorization import CallerPolicy
from hapi_grpc.transport.admission import ShutdownGate
from hapi_grpc.transport.interceptors import ServicePolicyInterceptor
from hapi_grpc.transport.reflection import DocumentedReflectionServicer
from hapi_grpc.transport.servicers import IncidentAnalysisServicer

log = logging.getLogger(__name__)

SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["IncidentAnalysisService"].full_name


# Longer than any deadline a caller is expected to set (the engine's default
# budget without one is 300 s).
_MAX_UNREQUESTED_SECONDS = 600


def server_options(settings: Settings) -> list[tuple[str, int]]:
    """Channel arguments. Keepalive pings detect dead peers without ever
    ending a healthy minutes-long investigation; connection ageing is off
    by default and, when on, its grace outlasts the longest investigation."""
    options = [
        ("grpc.keepalive_time_ms", int(settings.keepalive_time_seconds * 1000)),
        ("grpc.keepalive_timeout_ms", int(settings.keepalive_timeout_seconds * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        # Accept client pings as often as every 10 s without a GOAWAY.
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", settings.max_receive_message_bytes),
        # A call grpc core has received waits this long for the event loop to
        # take it up before core cancels it, unseen by any interceptor or log
        # (default 30 s: a storm that puts the loop 30 s behind lost calls as
        # silent CANCELLED). The caller's deadline, or core's bound on pending
        # calls (RESOURCE_EXHAUSTED past 1,000-3,000), ends such a call first.
        ("grpc.server_max_unrequested_time_in_server", _MAX_UNREQUESTED_SECONDS),
        # Two servers must never silently share a port.
        ("grpc.so_reuseport", 0),
    ]
    if settings.max_connection_age_seconds > 0:
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_seconds * 1000)),
            (
                "grpc.max_connection_age_grace_ms",
                int(settings.max_connection_age_grace_seconds * 1000),
            ),
        ]
    return options


# What a shutdown takes after its grace, at most: closing the adapters here,
# closing the toolset clients in `app.serve` (CLOSE_SECONDS each), and flushing
# spans, bound by the OTLP exporter's own timeout (10 s by default). A pod's
# terminationGracePeriodSeconds covers the shutdown delay, the grace and this.
CLOSE_SECONDS = 5.0
AFTER_GRACE_SECONDS = 2 * CLOSE_SECONDS + 10.0


async def close_within(seconds: float, *closers: Callable[[], Awaitable[object]]) -> None:
    """Run `closers` in order, each failure ignored, all within `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            for close in closers:
                with contextlib.suppress(Exception):
                    await close()
    except TimeoutError:
        log.warning("closing clients took too long; left unclosed", extra={"seconds": seconds})


def is_loopback(host: str) -> bool:
    """True when `host` (as in HAPI_GRPC_HOST) only accepts connections from this machine."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


def drain_seconds(grace: float) -> float:
    """The share of a shutdown grace investigations may still use.

    The rest (a quarter, at most 2 s) is kept to send the answers.
    """
    return max(grace - min(grace * 0.25, 2.0), 0.0)


def stop_reserve(grace: float) -> float:
    """The end of the grace kept for `grpc.aio.Server.stop()` itself: the wait
    for hapi.v1 calls to finish gives up this long before the grace ends."""
    return min(grace * 0.1, 0.5)


class HapiServer:
    """Hosts IncidentAnalysisService over `application`, with health and reflection;
    the service is ready once `ready` (when given) returns.

    `interceptors` come first (outermost: tracing, authentication), then the
    server's own policies of hapi.v1 calls (`ServicePolicyInterceptor`: the
    shutdown gate, the concurrency cap, request validation, error mapping);
    `callers` makes each request's `Caller`. Stopping closes the application,
    `callers` and the interceptors' clients.
    """

    def __init__(
        self,
        settings: Settings,
        application: Application[StreamResponse],
        *,
        callers: CallerPolicy | None = None,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
        server_credentials: grpc.ServerCredentials | None = None,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.settings = settings
        self.application = application
        self.history = application.outcomes.history  # where decisions and outcomes are kept
        self.callers = callers or CallerPolicy(settings.tool_output_exposure)
        self._ready = ready
        self._readying: asyncio.Task[None] | None = None
        self.health = health.aio.HealthServicer()
        self.gate = ShutdownGate()
        self._interceptors: list[grpc.aio.ServerInterceptor] = [
            *interceptors,
            ServicePolicyInterceptor(settings.max_concurrent_rpcs, gate=self.gate),
        ]
        self._server = grpc.aio.server(
            interceptors=self._interceptors, options=server_options(settings)
        )
        service_pb2_grpc.add_IncidentAnalysisServiceServicer_to_server(
            IncidentAnalysisServicer(application, self.callers), self._server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        if settings.reflection:
            reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
                DocumentedReflectionServicer(
                    (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
                ),
                self._server,
            )
        address = f"{settings.grpc_host}:{settings.grpc_port}"
        if server_credentials is not None:
            self.port = self._server.add_secure_port(address, server_credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot bind the gRPC port {address}")
        self._stopping: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # What exists now (modules, descriptors, the catalog, the server)
        # lives as long as the process: out of the cyclic collector's scans,
        # or each full collection during an alert storm walks all of it. The
        # objects of an investigation in flight live for its seconds, so every
        # collection that runs during a storm scans them and frees almost
        # nothing (a mid-storm collection freed under 150 objects). Larger
        # generations run fewer of those scans: a 1,000-call storm spent
        # 0.6-1.2 s in full collections with the default (700, 10, 10), 0.38 s
        # with (10,000, 10, 10), 0.22 s and no second-generation pass with
        # (50,000, 20, 20), for a few MB of garbage held a little longer.
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        await self._server.start()
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        if self._ready is None:
            await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        else:
            await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
            self._readying = asyncio.create_task(self._serve_when_ready(self._ready))
        log.info(
            "gRPC server listening",
            extra={
                "port": self.port,
                "llm_provider": self.application.engine.llm_name,
                "tls": bool(self.settings.tls_cert_file),
            },
        )
        if self.settings.auth_mode == "none" and not is_loopback(self.settings.grpc_host):
            log.warning(
                "listening beyond loopback without authentication (HAPI_AUTH_MODE=none):"
                " anyone who reaches the port can have any namespace investigated and read"
                " what the tools return; set HAPI_AUTH_MODE=tokenreview (docs/operations.md)",
                extra={"host": self.settings.grpc_host},
            )

    async def _serve_when_ready(self, ready: Callable[[], Awaitable[None]]) -> None:
        try:
            await ready()
        except Exception:  # the dependency never came up: readiness stays NOT_SERVING
            log.exception("the server's readiness check failed")
            return
        # After enter_graceful_shutdown() this changes nothing: shutdown wins.
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("ready", extra={"service": SERVICE_NAME})

    def stop(self, grace: float | None = None) -> asyncio.Task[None]:
        """Begin a graceful shutdown (idempotent); await the task to wait for it."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(grace))
        return self._stopping

    async def _stop(self, grace: float | None) -> None:
        grace = self.settings.shutdown_grace_seconds if grace is None else grace
        log.info("shutting down", extra={"grace_seconds": grace})
        # Probes see NOT_SERVING first, and nothing can flip it back.
        await self.health.enter_graceful_shutdown()
        if self._readying is not None:
            self._readying.cancel()
        if self.settings.shutdown_delay_seconds > 0:
            await asyncio.sleep(self.settings.shutdown_delay_seconds)
        ends = time.monotonic() + grace
        # New and queued hapi.v1 calls are answered UNAVAILABLE, which callers
        # retry on another replica; health and reflection still answer.
        self.gate.close()
        # Running investigations end with their best partial result while
        # there is still time to send it; only what cannot answer is cut.
        self.application.drain(drain_seconds(grace))
        idle = await self.gate.wait_until_idle(ends - stop_reserve(grace))
        log.info("hapi.v1 calls drained", extra={"idle": idle, "in_flight": self.gate.in_flight})
        # What grpc.aio does once stop() begins (measured with grpcio 1.85):
        # calls arriving afterwards fail UNAVAILABLE on the caller's side
        # (GOAWAY, then the closed listener), but calls grpc core has already
        # received and not yet handed to a handler are CANCELLED, and grpc.aio
        # hands them over one at a time. Stopping only once nothing was in
        # flight or arriving for a few event loop turns leaves to that
        # cancellation just the calls that reach the server in the last poll
        # (about 20 ms) before stop(); or, when callers keep sending faster
        # than grpc.aio hands calls over until the grace is nearly spent, the
        # queue of that moment. The library offers no GOAWAY without it.
        await self._server.stop(max(ends - time.monotonic(), 0.0))
        await close_within(
            CLOSE_SECONDS,
            self.application.close,
            self.callers.close,
            *(close for close in (getattr(i, "close", None) for i in self._interceptors) if close),
        )
        log.info("server stopped")
