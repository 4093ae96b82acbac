"""A Data Storage stand-in for the remediation history endpoints, over real HTTP.

`GET /api/v1/remediation-history/context` answers the chain of `entries`
(contract shape, camelCase) and refuses a missing required parameter with a
400 problem; `GET /api/v1/effectiveness/{id}` answers `assessments[id]` or a
404 problem. `faults` is a queue of behaviours served before the contract's
answers: "500", "slow", "malformed", "html".
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from aiohttp import web

REQUIRED = ("targetKind", "targetName", "targetNamespace", "currentSpecHash")


def problem(status: int, title: str, detail: str = "") -> web.Response:
    return web.json_response(
        {"type": "about:blank", "title": title, "status": status, "detail": detail},
        status=status,
        content_type="application/problem+json",
    )


class HistoryServer:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.regression = False
        self.assessments: dict[str, dict[str, Any]] = {}
        self.faults: deque[str] = deque()
        self.queries: list[dict[str, str]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/v1/remediation-history/context", self._context)
        app.router.add_get("/api/v1/effectiveness/{id}", self._effectiveness)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _fault(self) -> web.StreamResponse | None:
        if not self.faults:
            return None
        fault = self.faults.popleft()
        if fault == "400":
            return problem(400, "missing parameter", "currentSpecHash is required")
        if fault == "500":
            return problem(500, "store failure")
        if fault == "slow":
            await asyncio.sleep(5)
        if fault == "malformed":
            return web.Response(
                body=b'{"targetResource": 7, "tier1": [', content_type="application/json"
            )
        if fault == "html":
            return web.Response(body=b"<html>oops</html>", content_type="text/html")
        return None

    async def _context(self, request: web.Request) -> web.StreamResponse:
        self.queries.append(dict(request.query))
        fault = await self._fault()
        if fault is not None:
            return fault
        missing = [name for name in REQUIRED if name not in request.query]
        if missing:
            return problem(400, "missing parameter", ", ".join(missing))
        q = request.query
        return web.json_response(
            {
                "targetResource": f"{q['targetNamespace']}/{q['targetKind']}/{q['targetName']}",
                "currentSpecHash": q["currentSpecHash"],
                "regressionDetected": self.regression,
                "tier1": {"window": q.get("tier1Window", "24h"), "chain": self.entries},
                "tier2": {"window": q.get("tier2Window", "2160h"), "chain": []},
            }
        )

    async def _effectiveness(self, request: web.Request) -> web.StreamResponse:
        fault = await self._fault()
        if fault is not None:
            return fault
        found = self.assessments.get(request.match_info["id"])
        if found is None:
            return problem(404, "not found", "nothing assessed for this id")
        return web.json_response(found)
