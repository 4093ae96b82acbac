"""A small Data Storage REST server that serves a workflow catalog.

Design notes: docs/internals.md (`adapters/datastorage_server.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.catalog import SearchQuery, is_valid_workflow_id
from hapi_grpc.domain.errors import WorkflowNotFoundError

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
# A search body is a query of at most 1 KiB plus labels; anything near this
# limit is not a search request.
MAX_BODY_BYTES = 64 * 1024
SHUTDOWN_TIMEOUT_SECONDS = 5.0
MAX_REPORTED_ERRORS = 10

CATALOG_KEY = web.AppKey("catalog", EmbeddedCatalog)

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def create_app(catalog: EmbeddedCatalog) -> web.Application:
    """An aiohttp application serving `catalog` over the Data Storage contract."""
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_problem_middleware])
    app[CATALOG_KEY] = catalog
    # The search route is registered before `{workflow_id}` so that
    # POST .../search never reaches the by-id resource.
    app.router.add_post("/api/v1/workflows/search", _search)
    by_id = "/api/v1/workflows/{workflow_id}"
    app.router.add_get(f"{by_id}/schema", functools.partial(_by_id, EmbeddedCatalog.get_schema))
    app.router.add_get(by_id, functools.partial(_by_id, EmbeddedCatalog.get_workflow))
    app.router.add_get("/healthz", _healthz)
    return app


async def run_datastorage_server(catalog_file: str | None, host: str, port: int) -> None:
    """Serve `catalog_file` (None: the bundled catalog) until cancelled or SIGTERM/SIGINT.

    Raises `CatalogFileError` before binding when the catalog is unusable.
    """
    catalog = EmbeddedCatalog.from_file(catalog_file)
    runner = web.AppRunner(create_app(catalog), shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS)
    await runner.setup()
    stop = asyncio.Event()
    installed: list[signal.Signals] = []
    loop = asyncio.get_running_loop()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        for signum in (signal.SIGTERM, signal.SIGINT):
            # Only possible in the main thread of a Unix process; elsewhere the
            # caller stops the server by cancelling this coroutine.
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, stop.set)
                installed.append(signum)
        addresses = ", ".join(_url(address) for address in runner.addresses)
        logger.info(
            "data storage catalog server: %d workflows from %s, listening on %s",
            len(catalog),
            catalog_file or "the bundled catalog",
            addresses,
        )
        await stop.wait()
        logger.info("data storage catalog server: stopping")
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        await runner.cleanup()


def _url(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = address[0]
        return f"http://[{host}]:{address[1]}" if ":" in host else f"http://{host}:{address[1]}"
    return str(address)


# --------------------------------------------------------------------- handlers


async def _search(request: web.Request) -> web.Response:
    try:
        body = bounded_json.loads(await request.read(), max_bytes=MAX_BODY_BYTES)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _problem(request, HTTPStatus.BAD_REQUEST, f"request body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _problem(request, HTTPStatus.BAD_REQUEST, "request body must be a JSON object")
    filters = body.get("filters")
    if isinstance(filters, dict):
        # DD-HAPI-001 shows Data Storage receiving `signal-type`; accept the
        # hyphenated spelling of every filter key rather than ignore it.
        body = {**body, "filters": {str(k).replace("-", "_"): v for k, v in filters.items()}}
    try:
        query = SearchQuery.model_validate(body)
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in err["loc"]) or "<body>", "message": err["msg"]}
            for err in exc.errors(include_url=False)[:MAX_REPORTED_ERRORS]
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return _problem(
            request, HTTPStatus.BAD_REQUEST, f"invalid search request: {detail}", errors=errors
        )
    result = await request.app[CATALOG_KEY].search(query)
    logger.debug(
        "workflow search remediation_id=%s query=%r hits=%d",
        query.remediation_id or "-",
        query.query,
        len(result.workflows),
    )
    return web.json_response(result.model_dump(mode="json", exclude_none=True))


async def _by_id(
    read: Callable[[EmbeddedCatalog, str], Awaitable[BaseModel]], request: web.Request
) -> web.Response:
    """What the catalog's `read` returns for the path's workflow id; 404 for an unknown
    or malformed id."""
    workflow_id = request.match_info["workflow_id"]
    try:
        if not is_valid_workflow_id(workflow_id):
            raise WorkflowNotFoundError(workflow_id)
        found = await read(request.app[CATALOG_KEY], workflow_id)
    except WorkflowNotFoundError as exc:
        return _problem(request, HTTPStatus.NOT_FOUND, exc.message)
    return web.json_response(found.model_dump(mode="json", exclude_none=True))


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "workflows": len(request.app[CATALOG_KEY])})


# ----------------------------------------------------------------------- errors


def _problem(
    request: web.Request,
    status: HTTPStatus,
    detail: str,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> web.Response:
    """An RFC 7807 problem response; `type` about:blank means "see the status code"."""
    body = {
        "type": "about:blank",
        "title": status.phrase,
        "status": int(status),
        "detail": detail,
        "instance": request.path,
        **extensions,
    }
    return web.json_response(
        body, status=int(status), content_type=PROBLEM_CONTENT_TYPE, headers=headers
    )


@web.middleware
async def _problem_middleware(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """Turn aiohttp's own errors (404 route, 405, 413) and crashes into problem documents."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return _problem(request, HTTPStatus(exc.status), _detail(request, exc), headers=headers)
    except Exception:
        logger.exception("unhandled error serving %s %s", request.method, request.path)
        return _problem(request, HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")


def _detail(request: web.Request, exc: web.HTTPException) -> str:
    if exc.status == HTTPStatus.NOT_FOUND:
        return f"no resource at {request.path}"
    if exc.status == HTTPStatus.METHOD_NOT_ALLOWED:
        return f"method {request.method} is not allowed for {request.path}"
    # aiohttp's default text is "<status>: <reason>"; keep only informative texts.
    text = exc.text or ""
    return text if text and not text.startswith(f"{exc.status}:") else exc.reason
