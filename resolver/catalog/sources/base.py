"""What every catalog source is: something that fetches a whole :class:`Catalog` on demand.

Implemented by :mod:`.directory`, :mod:`.catalogd` (HTTP) and :mod:`.registry` (gRPC); chosen by
:func:`resolver.catalog.sources.open_source`. Callers (the CLI's ``catalog render``, the daemon's
catalog watcher) call :meth:`CatalogSource.fetch` and compare :attr:`CatalogSource.digest`
between fetches to learn whether the content changed.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from resolver.catalog.model import Catalog


class CatalogSourceError(Exception):
    """A source could not produce a catalog; the message names the source and the reason."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"catalog source {source}: {reason}")


@runtime_checkable
class CatalogSource(Protocol):
    """A place a catalog can be fetched from."""

    spec: str
    """The address it was opened with (a path, an http(s) URL or a grpc:// target)."""

    @property
    def digest(self) -> str | None:
        """A digest of the content of the last successful fetch (None before the first)."""
        ...

    def fetch(self) -> Catalog:
        """Return the whole catalog, or raise CatalogSourceError; never a partly read one."""
        ...
