"""What the TokenReview and SubjectAccessReview clients share: POSTing a review
object to the API server as the service account, through the service's `HttpClient`."""

from __future__ import annotations

from typing import Any

from yarl import URL

from hapi_grpc.adapters.http.client import HttpClient

__all__ = ["ReviewClient"]

MAX_ANSWER_BYTES = 1 << 20  # a review's answer is a few kilobytes


class ReviewClient:
    """Creates review objects at one API path as the service account (its token file
    re-read when the kubelet rotates it), trusting `ca_file` (the system store
    without one); each request's timeout is `timeout` clipped to the caller's
    deadline."""

    def __init__(self, url: str, ca_file: str | None, sa_token_file: str, timeout: float) -> None:
        self.url = url
        base = URL(url)
        self._path = base.raw_path
        self._http = HttpClient(
            str(base.with_path("").with_query(None)),
            name="the API server",
            timeout=timeout,
            headers={"Accept": "application/json"},
            token_file=sa_token_file,
            ca_file=ca_file,
            max_connections=16,
        )

    async def create(self, body: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
        """The status the API server filled into `body`; anything else raises `error`."""
        kind = body["kind"]
        response = await self._http.send(
            "POST", self._path, json_body=body, limit=MAX_ANSWER_BYTES, error_limit=0
        )
        if response.status not in (200, 201):
            raise error(f"{kind} answered HTTP {response.status}")
        if response.over:
            raise error(f"{kind} answer is larger than {MAX_ANSWER_BYTES} bytes")
        try:
            payload = response.json()
        except ValueError as exc:  # not JSON, too large or too deep
            raise error(f"{kind} answer is not usable JSON: {exc}") from None
        status = payload.get("status") if isinstance(payload, dict) else None
        if not isinstance(status, dict):
            raise error(f"{kind} answer has no status")
        return status

    async def close(self) -> None:
        await self._http.close()
