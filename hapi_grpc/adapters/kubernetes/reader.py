"""`ApiServerReader`: read-only access to one cluster over HTTPS, GET requests only.

Design notes: docs/internals.md (`adapters/kubernetes/reader.py`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable, LineTooLong, lines
from hapi_grpc.adapters.http.transport import Transport
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.domain.sensitive import clip, redact

if TYPE_CHECKING:
    from hapi_grpc.adapters.kubernetes.credentials import ClusterConnection

__all__ = ["ApiServerReader", "KubeFailure", "KubeFailureKind", "ResourceType"]

logger = logging.getLogger(__name__)

MAX_OBJECT_BYTES = 2 * 1024 * 1024
MAX_LIST_BYTES = 8 * 1024 * 1024
_ERROR_BODY_BYTES = 64 * 1024
# Silence tolerated past a watch's own timeout before its connection counts as dead.
_WATCH_MARGIN = 15
# A backstop only: every request is timed by its caller (a tool's per-call timeout).
_LONGEST_REQUEST = 300.0


@dataclass(frozen=True)
class ResourceType:
    """One kind as the cluster serves it (resolved through discovery, so any kind it
    serves, custom resources included, has one)."""

    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_label(self) -> str:
        """The group as ADR-038 spells it: `core` for the core group."""
        return self.group or "core"


class KubeFailureKind(enum.Enum):
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    INVALID = "invalid"  # the server rejected the request (bad selector, no such container)
    UNKNOWN_KIND = "unknown_kind"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    TOO_LARGE = "too_large"
    EXPIRED = "expired"  # 410 Gone: a resourceVersion or continue token too old to serve


class KubeFailure(Exception):
    """A read that gave no usable answer; `message` is safe to show the model."""

    def __init__(self, kind: KubeFailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _segment(value: str) -> str:
    return quote(value, safe="")


class ApiServerReader:
    """Reads one cluster (see module docstring); share one per process."""

    def __init__(
        self,
        connection: ClusterConnection,
        *,
        discovery_ttl: float = 300.0,
        max_connections: int = 16,
        transport: Transport | None = None,
    ) -> None:
        from hapi_grpc.adapters.kubernetes.discovery import Discovery

        self._http = HttpClient(
            connection.url,
            name="the API server",
            timeout=_LONGEST_REQUEST,
            ssl_context=connection.ssl_context,
            auth=connection.auth_header,
            max_connections=max_connections,
            transport=transport,
        )
        self.url = connection.url
        self._discovery = Discovery(self._discovery_fetch, ttl=discovery_ttl)

    async def close(self) -> None:
        await self._http.close()

    # --- reads ------------------------------------------------------------------------

    async def resolve(self, kind: str, timeout: float) -> ResourceType:
        """The resource type for a kind, plural, short name or `group/version/Kind`."""
        return await self._discovery.resolve(kind, timeout)

    async def get(
        self, rtype: ResourceType, namespace: str | None, name: str, timeout: float
    ) -> dict[str, Any]:
        """One object as JSON."""
        path = f"{self._collection(rtype, namespace)}/{_segment(name)}"
        return await self._get_json(path, {}, timeout, MAX_OBJECT_BYTES)

    async def list(
        self,
        rtype: ResourceType,
        namespace: str | None,
        timeout: float,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 50,
        continue_token: str = "",
        prune: bool = False,
    ) -> dict[str, Any]:
        """One page of a list. `prune`: an object nested past `bounded_json.MAX_DEPTH`
        holds `bounded_json.PRUNED` instead of failing the page (the informer leaves
        that object out); the page is then parsed off the event loop."""
        params: dict[str, str] = {"limit": str(max(1, limit))}
        if continue_token:
            params["continue"] = continue_token
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        path = self._collection(rtype, namespace)
        return await self._get_json(path, params, timeout, MAX_LIST_BYTES, pruned=prune)

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        timeout: float,
        *,
        previous: bool = False,
        tail_lines: int = 100,
        since_seconds: int | None = None,
        limit_bytes: int = 256 * 1024,
    ) -> str:
        """The tail of one container's log."""
        params = {"container": container, "tailLines": str(tail_lines)}
        params["limitBytes"] = str(limit_bytes)
        if previous:
            params["previous"] = "true"
        if since_seconds:
            params["sinceSeconds"] = str(since_seconds)
        path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(pod)}/log"
        body, _ = await self._get(path, params, timeout, limit_bytes, accept="*/*", cut=True)
        return body.decode("utf-8", errors="replace")

    async def node_stats(self, node: str, timeout: float) -> dict[str, Any]:
        """The node's kubelet stats summary (`/stats/summary`, through the node proxy)."""
        # A GET of this one path: nothing else of the kubelet is ever requested.
        path = f"/api/v1/nodes/{_segment(node)}/proxy/stats/summary"
        return await self._get_json(path, {}, timeout, MAX_OBJECT_BYTES)

    async def watch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        resource_version: str,
        *,
        timeout_seconds: int,
        max_event_bytes: int,
        connect_timeout: float = 10.0,
        on_open: Callable[[], None] = lambda: None,
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch from `resource_version`, bookmarks included, until
        the server ends it (after `timeout_seconds`). An event longer than
        `max_event_bytes` is a `TOO_LARGE` failure; silence longer than the
        watch's own timeout (plus a margin) is a `TIMEOUT`: the connection is dead.
        An object nested past `bounded_json.MAX_DEPTH` holds `bounded_json.PRUNED`."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        try:
            async with self._http.stream(
                "GET",
                self._collection(rtype, namespace),
                params=params,
                headers={"Accept": "application/json"},
                read_timeout=timeout_seconds + _WATCH_MARGIN,
                connect_timeout=connect_timeout,
            ) as response:
                if response.status != 200:
                    body, _ = await response.read(_ERROR_BODY_BYTES)
                    raise _status_failure(response.status, body)
                on_open()
                async for line in lines(response.chunks(), max_event_bytes):
                    try:
                        event = bounded_json.loads_pruned(
                            line, max_bytes=max_event_bytes, max_depth=bounded_json.MAX_DEPTH + 1
                        )
                    except ValueError:
                        raise KubeFailure(
                            KubeFailureKind.UNAVAILABLE, "the API server sent a non-JSON event"
                        ) from None
                    if isinstance(event, dict):
                        yield event
        except LineTooLong:
            raise KubeFailure(
                KubeFailureKind.TOO_LARGE, f"a watch event is larger than {max_event_bytes} bytes"
            ) from None
        except TimeoutError:
            raise KubeFailure(
                KubeFailureKind.TIMEOUT, "the watch was silent past its timeout"
            ) from None
        except HttpUnavailable as exc:
            raise KubeFailure(KubeFailureKind.UNAVAILABLE, clip(redact(exc.message), 200)) from None

    # --- requests ---------------------------------------------------------------------

    @staticmethod
    def _collection(rtype: ResourceType, namespace: str | None) -> str:
        base = f"/apis/{rtype.group}/{rtype.version}" if rtype.group else f"/api/{rtype.version}"
        if rtype.namespaced and namespace:
            base += f"/namespaces/{_segment(namespace)}"
        return f"{base}/{rtype.plural}"

    async def _discovery_fetch(self, path: str, accept: str, timeout: float) -> dict[str, Any]:
        return await self._get_json(path, {}, timeout, MAX_LIST_BYTES, accept=accept)

    async def _get_json(
        self,
        path: str,
        params: dict[str, str],
        timeout: float,
        max_bytes: int,
        *,
        accept: str = "application/json",
        pruned: bool = False,
    ) -> dict[str, Any]:
        """The body as a JSON object. `pruned`: a list page whose objects nested too
        deep are pruned, not refused, parsed off the event loop."""
        body, _ = await self._get(
            path, params, timeout, max_bytes, accept=accept or "application/json"
        )
        try:
            if pruned:  # an object's own levels below the list's two (the list, its items)
                value = await asyncio.to_thread(
                    bounded_json.loads_pruned,
                    body,
                    max_bytes=max_bytes,
                    max_depth=bounded_json.MAX_DEPTH + 2,
                )
            else:
                value = bounded_json.loads(body, max_bytes=max_bytes)
        except ValueError:
            raise KubeFailure(
                KubeFailureKind.UNAVAILABLE, "the API server answered non-JSON"
            ) from None
        if not isinstance(value, dict):
            raise KubeFailure(
                KubeFailureKind.UNAVAILABLE, "the API server answered non-object JSON"
            )
        return value

    async def _get(
        self,
        path: str,
        params: dict[str, str],
        timeout: float,
        max_bytes: int,
        *,
        accept: str,
        cut: bool = False,
    ) -> tuple[bytes, bool]:
        """GET `path`; (body, cut). The only place a request is sent."""
        try:
            seconds = self._http.timeout(timeout)
        except BudgetExhaustedError:
            raise KubeFailure(KubeFailureKind.TIMEOUT, "no time left in the budget") from None
        try:
            response = await self._http.send(
                "GET",
                path,
                params=params,
                headers={"Accept": accept},
                timeout=seconds,
                limit=max_bytes,
                error_limit=_ERROR_BODY_BYTES,
            )
        except TimeoutError:
            raise KubeFailure(
                KubeFailureKind.TIMEOUT, f"the API server did not answer within {seconds:.3g}s"
            ) from None
        except HttpUnavailable as exc:
            logger.warning("kubernetes request failed: %s", clip(redact(exc.message), 300))
            raise KubeFailure(
                KubeFailureKind.UNAVAILABLE, "the API server is unreachable"
            ) from None
        if response.status != 200:
            raise _status_failure(response.status, response.body)
        if response.over and not cut:
            raise KubeFailure(
                KubeFailureKind.TOO_LARGE,
                f"the answer is larger than {max_bytes} bytes; narrow the request",
            )
        return response.body, response.over


def _status_failure(status: int, body: bytes) -> KubeFailure:
    try:
        message = str(bounded_json.loads(body, max_bytes=len(body) + 1).get("message", ""))
    except (ValueError, AttributeError):
        message = body[:300].decode("utf-8", errors="replace")
    message = clip(redact(" ".join(message.split())), 300)
    if status == 404:
        return KubeFailure(KubeFailureKind.NOT_FOUND, f"not found: {message}")
    if status == 410:
        return KubeFailure(KubeFailureKind.EXPIRED, f"expired: {message}")
    if status in (401, 403):
        return KubeFailure(
            KubeFailureKind.FORBIDDEN,
            f"forbidden: the service's role may not read this ({message})",
        )
    if status in (400, 422):
        return KubeFailure(
            KubeFailureKind.INVALID, f"the API server refused the request: {message}"
        )
    if status == 429:
        return KubeFailure(KubeFailureKind.UNAVAILABLE, "the API server is throttling requests")
    return KubeFailure(KubeFailureKind.UNAVAILABLE, f"the API server answered {status}: {message}")
