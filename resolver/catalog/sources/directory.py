"""A catalog source for a file-based catalog directory: delegates to the shared loader (every file
of the directory, ``.indexignore`` included, read through :mod:`resolver.catalog.guard`).

Opened by :func:`resolver.catalog.sources.open_source` for paths and ``file://`` URLs.
"""

from __future__ import annotations

import hashlib
import os

from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog
from resolver.catalog.sources.base import CatalogSourceError
from resolver.catalog.walk import list_catalog_files


class DirectorySource:
    """Loads an FBC directory; the digest covers every file's name, size and mtime."""

    def __init__(self, path: str, *, name: str | None = None) -> None:
        self.spec = path
        self.path = path
        self.name = name
        self._digest: str | None = None

    @property
    def digest(self) -> str | None:
        """Digest of the file list of the last fetch."""
        return self._digest

    def current_digest(self) -> str:
        """Digest of the directory as it is now (cheap: no file is read)."""
        files, problems = list_catalog_files(self.path)
        h = hashlib.sha256()
        for f in files:
            h.update(f"{f.relpath}\0{f.signature}\n".encode("utf-8", "surrogateescape"))
        for p in problems:
            h.update(f"{p}\n".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def fetch(self) -> Catalog:
        """Load the directory (raises CatalogSourceError with every problem the loader found)."""
        if not os.path.isdir(self.path):
            raise CatalogSourceError(self.spec, "no such directory")
        digest = self.current_digest()
        try:
            catalog = load_directory(self.path, name=self.name)
        except CatalogLoadError as err:
            raise CatalogSourceError(self.spec, str(err)) from None
        self._digest = digest
        return catalog
