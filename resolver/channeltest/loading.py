"""Read a catalog for testing even when parts of it are broken.

:func:`load_for_test` loads a directory with :func:`resolver.catalog.load.load_directory`; when
that refuses the catalog (a malformed file, an undecodable object), it loads every object that
*can* be read, file by file, and returns the problems beside it, so ``catalog test`` still reports
everything it can check, the load problems first. Called by the CLI and the bench.
"""

from __future__ import annotations

import os

from resolver.catalog.decode import CatalogObject
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.guard import read_text
from resolver.catalog.load import assemble, load_directory, load_file_objects
from resolver.catalog.model import Catalog
from resolver.catalog.walk import list_catalog_files


def load_for_test(path: str, *, use_cache: bool = True) -> tuple[Catalog, list[Problem]]:
    """Load ``path``; return the catalog and the problems that kept parts of it out.

    Raises CatalogLoadError only when nothing can be read at all (missing directory, I/O).
    """
    try:
        return load_directory(path, use_cache=use_cache), []
    except CatalogLoadError as err:
        if not os.path.isdir(path):
            raise
        first = err.problems
    files, problems = list_catalog_files(path)
    objects: list[CatalogObject] = []
    for ref in files:
        try:
            text = read_text(path, ref.path)
        except OSError:  # RefusedFile included
            continue  # the first load's problems already name this file
        found, _ = load_file_objects(text, ref.relpath)
        objects.extend(found)
    name = os.path.basename(os.path.abspath(path))
    return assemble(objects, name), first or problems
