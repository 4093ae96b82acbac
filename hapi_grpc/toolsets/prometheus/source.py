"""A metrics source over HTTP (Prometheus or Alertmanager), and its failures.

Design notes: docs/internals.md (`toolsets/prometheus/source.py`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable
from hapi_grpc.adapters.http.transport import Response, Transport
from hapi_grpc.domain import deadline
from hapi_grpc.domain.errors import BudgetExhaustedError, HapiError
from hapi_grpc.toolsets.prometheus import PrometheusSettings, parse_headers

__all__ = [
    "MAX_RESPONSE_BYTES",
    "MetricsQueryError",
    "MetricsSource",
    "MetricsUnavailableError",
    "QueryRefusedError",
    "ResponseTooLargeError",
]

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_CONNECT_TIMEOUT = 3.0
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class MetricsQueryError(HapiError):
    """The server (or our own bounds) rejected this request; a different one may work.

    `error_type` is the server's `errorType` (`bad_data`, `execution`,
    `timeout`, ...) or `refused` for a request stopped before it was sent.
    """

    def __init__(self, message: str, error_type: str = "bad_data") -> None:
        super().__init__(message)
        self.error_type = error_type


class QueryRefusedError(MetricsQueryError):
    """A request outside our bounds (range, points, length), refused before sending."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "refused")


class ResponseTooLargeError(MetricsQueryError):
    """The answer is larger than the client accepts; a narrower request may fit."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "too_large")


class MetricsUnavailableError(HapiError):
    """The source cannot answer now: connection, timeout, 5xx, credentials, a body that
    breaks the API."""


class MetricsSource:
    """GETs with JSON answers to one source at `url`, with the `prometheus` toolset's
    credentials and headers; `name` says which in messages ("Prometheus")."""

    def __init__(
        self,
        name: str,
        url: str,
        settings: PrometheusSettings,
        timeout: float,
        *,
        transport: Transport | None = None,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        headers = parse_headers(settings.prometheus_headers)
        for header, value in headers.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"headers: {header!r} is not a valid header name")
            if "\r" in value or "\n" in value:
                raise ValueError(f"headers: the value of {header!r} contains a line break")
        ca_file = settings.prometheus_ca_file or None
        if ca_file is not None and not os.path.isfile(ca_file):
            raise ValueError(f"ca_file {ca_file!r} does not exist")
        self.name = name
        self.max_bytes = max_bytes
        self.http = HttpClient(
            url,
            name=name,
            timeout=timeout,
            connect_timeout=_CONNECT_TIMEOUT,
            headers={"Accept": "application/json", **headers},
            token_file=settings.prometheus_token_file or None,
            ca_file=ca_file,
            max_connections=20,
            transport=transport,
        )

    async def close(self) -> None:
        await self.http.close()

    async def get(
        self, path: str, params: Sequence[tuple[str, str]], *, timeout: float
    ) -> Response:
        """GET `path` within `timeout` seconds (`http.timeout`: the per-call timeout lowered
        to the caller's cap and budget); any HTTP status is returned, a failure to get one
        raises."""
        try:
            response = await self.http.send(
                "GET",
                path,
                params=params,
                timeout=timeout,
                limit=self.max_bytes,
                error_limit=self.max_bytes,
            )
        except TimeoutError:
            budget = deadline.current_budget()
            if budget is not None and budget.remaining() <= 0.05:
                raise BudgetExhaustedError(
                    f"the caller's deadline ran out waiting for {self.name}"
                ) from None
            raise MetricsUnavailableError(
                f"{self.name} did not answer within {timeout:.2f}s"
            ) from None
        except HttpUnavailable as exc:
            raise MetricsUnavailableError(exc.message) from None
        if response.over:
            raise ResponseTooLargeError(
                f"{self.name} answered with more than {self.max_bytes} bytes; narrow the "
                "selector, shorten the range or aggregate (sum by, topk)"
            )
        return response


def json_body(response: Response) -> Any:
    """The body as JSON; None when it is empty or not JSON."""
    try:
        return response.json() if response.body else None
    except ValueError:
        return None
