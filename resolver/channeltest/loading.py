"""Read a catalog for testing even when parts of it are broken.

:func:`load_for_test` loads a directory with :func:`resolver.catalog.load.load_directory`; when
that refuses the catalog (a malformed file, an undecodable object), it loads every object that
*can* be read, file by file, and returns the problems beside it, so ``catalog test`` still reports
everything it can check, the load problems first. The files are read as the loader reads them
(``catalog validate``): through the catalog file guard, one at a time, each file's text dropped
before the next is read, so memory holds the objects and at most one file. Called by the CLI and
the bench.
"""

from __future__ import annotations

import os

from resolver.catalog.decode import CatalogObject
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.guard import read_text, real_path
from resolver.catalog.load import (
    CatalogTooLarge,
    assemble,
    load_directory,
    load_file_objects,
)
from resolver.catalog.model import Catalog
from resolver.catalog.walk import CatalogFile, list_catalog_files


def load_for_test(path: str, *, use_cache: bool = True) -> tuple[Catalog, list[Problem]]:
    """Load ``path``; return the catalog and the problems that kept parts of it out.

    Raises CatalogLoadError only when nothing can be read at all (missing directory, I/O).
    """
    try:
        return load_directory(path, use_cache=use_cache), []
    except CatalogTooLarge:
        raise  # loading its files one by one would take what the refusal saves
    except CatalogLoadError as err:
        if not os.path.isdir(path):
            raise
        first = err.problems
    files, problems = list_catalog_files(path)
    real_root = real_path(path)  # where list_catalog_files found the files
    objects: list[CatalogObject] = []
    for ref in files:
        objects.extend(_readable_objects(real_root, ref))
    name = os.path.basename(os.path.abspath(path))
    return assemble(objects, name), first or problems


def _readable_objects(real_root: str, ref: CatalogFile) -> list[CatalogObject]:
    """The objects of one listed file that decode (its text is released on return)."""
    try:
        text = read_text(real_root, ref.path, walked=True, expect=(ref.device, ref.inode))
    except OSError:  # RefusedFile included: the first load's problems already name this file
        return []
    return load_file_objects(text, ref.relpath)[0]
