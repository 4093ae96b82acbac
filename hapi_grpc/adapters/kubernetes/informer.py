"""A list + watch copy of one collection of the API server, bounded.

Design notes: docs/internals.md (`adapters/kubernetes/informer.py`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hapi_grpc.adapters.kubernetes.reader import (
    ApiServerReader,
    KubeFailure,
    KubeFailureKind,
    ResourceType,
)
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.sensitive import clip, redact

__all__ = ["Informer", "InformerLimits", "ObjectKey"]

log = logging.getLogger(__name__)

T = TypeVar("T")
ObjectKey = tuple[str, str]  # (namespace, name)
_SHORTEST_WATCH = 1.0  # seconds; an empty watch ended sooner is not resumed at once


@dataclass(frozen=True, slots=True)
class InformerLimits:
    max_objects: int = 1000
    max_object_bytes: int = 256 * 1024
    page_size: int = 100
    request_timeout: float = 10.0  # one list page; the watch's connect
    watch_seconds: tuple[int, int] = (60, 120)  # each watch lasts a random time in this range
    backoff: tuple[float, float] = (0.2, 30.0)  # first and longest wait after a failure


class Informer(Generic[T]):
    """The objects of one collection as `parse` reads them (docs/internals.md).

    `on_change` is called (synchronously) after each change to `objects`;
    `on_state` after each change of `connected`. Run it as a task; cancel
    the task to stop it.
    """

    def __init__(
        self,
        reader: ApiServerReader,
        rtype: ResourceType,
        namespace: str | None,
        parse: Callable[[dict[str, Any]], T],
        *,
        limits: InformerLimits = InformerLimits(),
        on_change: Callable[[], None] = lambda: None,
        on_state: Callable[[], None] = lambda: None,
        on_relist: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self._reader = reader
        self._rtype = rtype
        self._namespace = namespace or None
        self._parse = parse
        self._limits = limits
        self._on_change = on_change
        self._on_state = on_state
        self._on_relist = on_relist
        self.objects: dict[ObjectKey, T] = {}
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.connected = False
        self.last_error = ""

    @property
    def name(self) -> str:
        return self._rtype.plural

    async def run(self) -> None:
        reason = "start"
        failures = 0
        while True:
            try:
                if reason:
                    self._on_relist(reason)
                    await self._list()
                    reason = ""
                    failures = 0
                if await self._watch():
                    failures = 0
                    continue  # ended by the server in time: resume at once
            except KubeFailure as failure:
                if failure.kind is KubeFailureKind.EXPIRED:
                    listing = bool(reason)
                    reason = "expired"  # compacted away: list again
                    if not listing:
                        continue  # at once after a watch; after a list, back off
                if failure.kind is KubeFailureKind.TOO_LARGE:
                    reason = "too_large"  # the next list leaves that object out
                    log.warning("kubernetes catalog: %s: %s", self.name, failure)
                else:
                    self._lost(failure)
            failures += 1
            await asyncio.sleep(self._backoff(failures))

    # -- list ---------------------------------------------------------------------

    async def _list(self) -> None:
        limits = self._limits
        found: dict[ObjectKey, T] = {}
        left_out = 0
        token = ""
        version = ""
        while True:
            page = await self._reader.list(
                self._rtype,
                self._namespace,
                limits.request_timeout,
                limit=limits.page_size,
                continue_token=token,
                prune=True,
            )
            self._contact()
            for item in page.get("items") or []:
                if not isinstance(item, dict):
                    continue
                if (
                    len(found) >= limits.max_objects
                    or bounded_json.holds_pruned(item)
                    or _size(item) > limits.max_object_bytes
                ):
                    left_out += 1
                    continue
                found[_key(item)] = self._parse(item)
            metadata = page.get("metadata") or {}
            version = str(metadata.get("resourceVersion") or version)
            token = str(metadata.get("continue") or "")
            remaining = metadata.get("remainingItemCount")
            if not token:
                break
            if len(found) >= limits.max_objects:
                left_out += remaining if isinstance(remaining, int) else 1
                break  # a consistent list would need the rest: the watch starts at `version`
        if left_out:
            log.warning(
                "kubernetes catalog: objects left out of the %s list for the bounds"
                " (%d objects, %d bytes and %d levels each at most)",
                self.name,
                limits.max_objects,
                limits.max_object_bytes,
                bounded_json.MAX_DEPTH,
                extra={"left_out": left_out},
            )
        self.objects = found
        self.resource_version = version
        self.synced.set()
        self._on_change()

    # -- watch --------------------------------------------------------------------

    async def _watch(self) -> bool:
        """One watch until the server ends it. False for one that ended at once
        with nothing (resumed after a backoff, not in a tight loop)."""
        low, high = self._limits.watch_seconds
        delivered = False
        started = time.monotonic()
        async for event in self._reader.watch(
            self._rtype,
            self._namespace,
            self.resource_version,
            timeout_seconds=random.randint(low, high),
            max_event_bytes=self._limits.max_object_bytes,
            connect_timeout=self._limits.request_timeout,
            on_open=self._contact,
        ):
            delivered = True
            self._apply(event)
        return delivered or time.monotonic() - started >= _SHORTEST_WATCH

    def _apply(self, event: dict[str, Any]) -> None:
        self._contact()
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":
            code = obj.get("code")
            message = clip(redact(str(obj.get("message", ""))), 200)
            if code == 410:
                raise KubeFailure(KubeFailureKind.EXPIRED, message)
            raise KubeFailure(KubeFailureKind.UNAVAILABLE, f"watch error {code}: {message}")
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            self.resource_version = version or self.resource_version
            return
        key = _key(obj)
        if kind != "DELETED" and bounded_json.holds_pruned(obj):
            raise KubeFailure(  # as for an event too large: the next list leaves it out
                KubeFailureKind.TOO_LARGE,
                f"{key[0]}/{key[1]} nests deeper than {bounded_json.MAX_DEPTH} levels",
            )
        if kind == "DELETED":
            self.objects.pop(key, None)
        elif kind in ("ADDED", "MODIFIED"):
            if key not in self.objects and len(self.objects) >= self._limits.max_objects:
                log.warning(
                    "kubernetes catalog: %s %s/%s left out: %d objects already kept",
                    self.name,
                    key[0],
                    key[1],
                    self._limits.max_objects,
                )
            else:
                self.objects[key] = self._parse(obj)
        else:
            return
        self.resource_version = version or self.resource_version
        self._on_change()

    # -- state --------------------------------------------------------------------

    def _contact(self) -> None:
        if not self.connected:
            if self.last_error:
                log.info(
                    "kubernetes catalog: the API server answers again",
                    extra={"resource": self.name},
                )
            self.connected = True
            self.last_error = ""
            self._on_state()

    def _lost(self, failure: KubeFailure) -> None:
        message = str(failure)
        was = self.connected
        self.connected = False
        self.last_error = message
        if was or not self.synced.is_set():
            log.warning(
                "kubernetes catalog: cannot read %s (%s); %s",
                self.name,
                message,
                "serving the catalog last read" if self.synced.is_set() else "not read yet",
                extra={"resource": self.name, "objects": len(self.objects)},
            )
        self._on_state()

    def _backoff(self, failures: int) -> float:
        first, longest = self._limits.backoff
        return random.uniform(first, min(longest, first * 2 ** min(failures, 16)))


def _key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _size(obj: dict[str, Any]) -> int:
    return len(json.dumps(obj, separators=(",", ":")))
