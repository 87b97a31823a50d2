"""Catalog sources behind one interface: a directory, catalogd's HTTP API, or an ``api.Registry``
gRPC server.

``open_source(spec, **options)`` picks the source from the address: ``http://``/``https://`` is a
catalogd base URL (``.../catalogs/<name>``), ``grpc://host:port`` (``grpcs://`` for TLS) a registry
server, anything else (or ``file://``) a directory. Used by ``pivoter catalog render`` and the
daemon's catalog watcher; no Kubernetes here.

The network sources (and their HTTP and gRPC client libraries) are imported only when named:
reading a directory, the common case of the command line, does not pay for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from resolver.catalog.sources.base import CatalogSource, CatalogSourceError
from resolver.catalog.sources.directory import DirectorySource

if TYPE_CHECKING:
    from resolver.catalog.sources.catalogd import CatalogdSource
    from resolver.catalog.sources.registry import RegistrySource

_LAZY = {
    "CatalogdSource": "resolver.catalog.sources.catalogd",
    "RegistrySource": "resolver.catalog.sources.registry",
}

__all__ = [
    "CatalogSource",
    "CatalogSourceError",
    "CatalogdSource",
    "DirectorySource",
    "RegistrySource",
    "open_source",
]


def open_source(spec: str, **options: Any) -> CatalogSource:
    """Return the source for ``spec``; ``options`` go to its constructor (e.g. ``timeout``,
    ``deadline``, ``ca_file``, ``token``, ``insecure_send_token``, ``max_bytes``,
    ``max_message_bytes``, ``name``)."""
    if spec.startswith(("http://", "https://")):
        source: Callable[..., CatalogSource] = __getattr__("CatalogdSource")
    elif spec.startswith(("grpc://", "grpcs://")):
        source = __getattr__("RegistrySource")
    else:
        return DirectorySource(spec.removeprefix("file://"), **options)
    return source(spec, **options)


def __getattr__(name: str) -> Any:
    """Import a network source the first time it is named."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
