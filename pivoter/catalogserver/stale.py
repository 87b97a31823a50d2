"""Advertise a stale catalog over gRPC: the reason in the initial metadata of every answer.

While :meth:`pivoter.catalogserver.reload.Reloader.stale_reason` says the catalog served is not
the directory's current content, every ``api.Registry`` and ``api.ExperimentalRegistry`` call
answers with the initial metadata ``x-pivoter-stale: <reason>`` (one ASCII line,
:mod:`resolver.catalog.sources.stale`); health and reflection calls are left alone. The HTTP side
sends the same reason as a header (:mod:`.httpserver`). :func:`pivoter.catalogserver.grpcserver.
build_server` wraps each registry method once with :meth:`StaleMarker.unary` or
:meth:`StaleMarker.stream` (a server interceptor would build new handlers for every call, about a
tenth of a unary call's time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from resolver.catalog.sources.stale import STALE_METADATA, encode_reason

__all__ = ["StaleMarker", "StaleReason"]

StaleReason = Callable[[], str | None]


class StaleMarker:
    """Wraps registry methods so that their answers carry :data:`STALE_METADATA` while stale."""

    def __init__(self, stale: StaleReason) -> None:
        self._stale = stale

    def _mark(self, context: Any) -> None:
        reason = self._stale()
        if reason:
            context.send_initial_metadata(((STALE_METADATA, encode_reason(reason)),))

    def unary(self, behavior: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """``behavior`` (a unary-unary method), marking its answer."""

        def call(request: Any, context: Any) -> Any:
            self._mark(context)
            return behavior(request, context)

        return call

    def stream(
        self, behavior: Callable[[Any, Any], Iterator[Any]]
    ) -> Callable[[Any, Any], Iterator[Any]]:
        """``behavior`` (a unary-stream method), marking its answer."""

        def call(request: Any, context: Any) -> Iterator[Any]:
            self._mark(context)
            yield from behavior(request, context)

        return call
