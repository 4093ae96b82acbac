"""The one outgoing HTTP client (`HttpClient`), its transports and its retry policy.

Every adapter that speaks HTTP (the language models, Data Storage, Prometheus,
Alertmanager, the Kubernetes API server, token and access reviews) sends
through an `HttpClient`; unit tests answer it with a `MockTransport` handler.
"""

from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable, LineTooLong, lines
from hapi_grpc.adapters.http.retry import (
    RequestSlots,
    RetryPolicy,
    TransientError,
    parse_retry_after,
)
from hapi_grpc.adapters.http.transport import (
    AiohttpTransport,
    MockTransport,
    Request,
    Response,
    TransportError,
)

__all__ = [
    "AiohttpTransport",
    "HttpClient",
    "HttpUnavailable",
    "LineTooLong",
    "MockTransport",
    "Request",
    "RequestSlots",
    "Response",
    "RetryPolicy",
    "TransientError",
    "TransportError",
    "lines",
    "parse_retry_after",
]
