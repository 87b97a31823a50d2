"""Catalog sources behind one interface: a directory, catalogd's HTTP API, or an ``api.Registry``
gRPC server.

``open_source(spec, **options)`` picks the source from the address: ``http://``/``https://`` is a
catalogd base URL (``.../catalogs/<name>``), ``grpc://host:port`` (``grpcs://`` for TLS) a registry
server, anything else (or ``file://``) a directory. Used by ``pivoter catalog render`` and the
daemon's catalog watcher; no Kubernetes here.
"""

from __future__ import annotations

from typing import Any

from resolver.catalog.sources.base import CatalogSource, SourceError
from resolver.catalog.sources.catalogd import CatalogdSource
from resolver.catalog.sources.directory import DirectorySource
from resolver.catalog.sources.registry import RegistrySource

__all__ = [
    "CatalogSource",
    "CatalogdSource",
    "DirectorySource",
    "RegistrySource",
    "SourceError",
    "open_source",
]


def open_source(spec: str, **options: Any) -> CatalogSource:
    """Return the source for ``spec``; ``options`` go to its constructor (e.g. ``timeout``,
    ``deadline``, ``ca_file``, ``token``, ``insecure_send_token``, ``max_bytes``,
    ``max_message_bytes``, ``name``)."""
    if spec.startswith(("http://", "https://")):
        return CatalogdSource(spec, **options)
    if spec.startswith(("grpc://", "grpcs://")):
        return RegistrySource(spec, **options)
    return DirectorySource(spec.removeprefix("file://"), **options)
