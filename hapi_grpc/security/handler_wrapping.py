"""An interceptor that wraps the handlers of the methods it applies to, each once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc

__all__ = ["HandlerWrappingInterceptor"]

# Handlers are registered once per server; the memo is cleared if it ever
# holds more, so it never grows.
_MAX_WRAPPED = 64


class HandlerWrappingInterceptor(grpc.aio.ServerInterceptor):
    """Subclasses say which methods they apply to and how a handler is wrapped;
    a method they do not apply to (or an unknown one) passes through as it is."""

    def __init__(self) -> None:
        self._wrapped: dict[tuple[str, int], grpc.RpcMethodHandler] = {}

    def _applies(self, method: str) -> bool:
        raise NotImplementedError

    def _wrap(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not self._applies(method):
            return handler  # an unknown method stays UNIMPLEMENTED
        key = (method, id(handler))
        wrapped = self._wrapped.get(key)
        if wrapped is None:
            if len(self._wrapped) > _MAX_WRAPPED:
                self._wrapped.clear()
            wrapped = self._wrapped[key] = self._wrap(handler)
        return wrapped
