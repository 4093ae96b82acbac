"""Errors of the metrics and alerts clients.

A toolset shows `MetricsQueryError` to the model as an actionable tool error
(the server's own message: fix the query and try again) and
`MetricsUnavailableError` as "this source cannot answer now". Neither is a
failure of the investigation. Both derive from the domain port's failures
(`hapi_grpc.domain.toolsets.prometheus.port`), which is what the toolsets catch.
"""

from __future__ import annotations

from hapi_grpc.domain.toolsets.prometheus.port import MetricsQueryFailure, MetricsSourceUnavailable


class MetricsQueryError(MetricsQueryFailure):
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


class MetricsUnavailableError(MetricsSourceUnavailable):
    """The server cannot answer now: connection, timeout, 5xx, or a body that breaks the API."""
