"""Advertise a stale catalog over gRPC: a server interceptor adding the reason to the metadata.

While :meth:`pivoter.catalogserver.reload.Reloader.stale_reason` says the catalog served is not
the directory's current content, every ``api.Registry`` and ``api.ExperimentalRegistry`` call
answers with the initial metadata ``x-pivoter-stale: <reason>`` (one ASCII line,
:mod:`resolver.catalog.sources.stale`); health and reflection calls are left alone. The HTTP side
sends the same reason as a header (:mod:`.httpserver`). Installed by
:func:`pivoter.catalogserver.grpcserver.build_server`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import grpc

from resolver.catalog.sources.stale import STALE_METADATA, encode_reason

__all__ = ["StaleInterceptor"]

_SERVICES = ("/api.Registry/", "/api.ExperimentalRegistry/")

StaleReason = Callable[[], str | None]

if TYPE_CHECKING:
    _Interceptor = grpc.ServerInterceptor[Any, Any]
else:  # the stubs' generic is not subscriptable at run time
    _Interceptor = grpc.ServerInterceptor


class StaleInterceptor(_Interceptor):
    """Adds :data:`STALE_METADATA` to the answers of the registry services while stale."""

    def __init__(self, stale: StaleReason) -> None:
        self._stale = stale

    def _mark(self, context: Any) -> None:
        reason = self._stale()
        if reason:
            context.send_initial_metadata(((STALE_METADATA, encode_reason(reason)),))

    def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Wrap the handlers of the registry services; pass every other call through."""
        handler = continuation(handler_call_details)
        method = str(getattr(handler_call_details, "method", ""))
        if handler is None or not method.startswith(_SERVICES):
            return handler
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler

    def _unary(self, behavior: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def call(request: Any, context: Any) -> Any:
            self._mark(context)
            return behavior(request, context)

        return call

    def _stream(
        self, behavior: Callable[[Any, Any], Iterator[Any]]
    ) -> Callable[[Any, Any], Iterator[Any]]:
        def call(request: Any, context: Any) -> Iterator[Any]:
            self._mark(context)
            yield from behavior(request, context)

        return call
