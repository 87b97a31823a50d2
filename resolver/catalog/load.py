"""Load a file-based catalog into a :class:`~resolver.catalog.model.Catalog`.

:func:`load_directory` reads an FBC directory exactly as ``opm`` reads it (every non-ignored file,
each a YAML or concatenated-JSON stream; unknown schemas kept as opaque blobs; every file read
through :mod:`resolver.catalog.guard`; on every core when there is enough to parse, see
:mod:`resolver.catalog.parallel`) and
:func:`load_served` also gives the body catalogd would serve, from the same read of each file;
:func:`load_objects` builds a catalog from objects that arrived some other way (gRPC, HTTP).
Both raise :class:`~resolver.catalog.errors.CatalogLoadError` with every problem found, each naming
file and line; they never return a half-loaded catalog. Loading does not validate the catalog's
graph: that is :func:`resolver.catalog.validate.validate`.

Called by the CLI (``pivoter catalog validate|render``), the catalog sources and servers.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Iterable, Iterator
from typing import Any

from resolver.catalog import cache as parsed_cache
from resolver.catalog.decode import CatalogObject, DecodeError, decode_object
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.guard import RefusedFile, read_bytes, real_path
from resolver.catalog.jsonl import Body, FileLines, join, render_file
from resolver.catalog.model import Bundle, Catalog, Channel, Deprecation, Meta, Origin, Package
from resolver.catalog.parallel import PARALLEL_MIN_BYTES, load_files
from resolver.catalog.parse import ParsedFile, parse_text
from resolver.catalog.walk import DEFAULT_MAX_FILE_BYTES, CatalogFile, list_catalog_files

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "gc_paused",
    "load_directory",
    "load_file_objects",
    "load_objects",
    "load_served",
]


def load_directory(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    cache_dir: str | None = None,
    use_cache: bool = True,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    workers: int | None = None,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> Catalog:
    """Load the FBC directory ``path``; ``name`` defaults to the directory's base name.

    Unchanged files are taken from the parsed-catalog cache (``cache_dir``, default
    :func:`resolver.catalog.cache.default_cache_dir`) unless ``use_cache`` is false. The other
    files are parsed by ``workers`` processes (default: one per core; 1 parses here) when they
    add up to ``parallel_min_bytes`` or more; the result is the same either way.
    Raises CatalogLoadError listing every problem (I/O ones have ``io`` set).
    """
    catalog, _ = _load(
        os.fspath(path),
        name=name,
        cache_dir=cache_dir,
        use_cache=use_cache,
        max_file_bytes=max_file_bytes,
        workers=workers,
        parallel_min_bytes=parallel_min_bytes,
        render=False,
    )
    return catalog


def load_served(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    cache_dir: str | None = None,
    use_cache: bool = True,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    workers: int | None = None,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> tuple[Catalog, Body]:
    """:func:`load_directory`, and the catalog's body as catalogd serves it, from the same read
    of each file (:mod:`resolver.catalog.jsonl`; kept in the cache beside the objects)."""
    catalog, files = _load(
        os.fspath(path),
        name=name,
        cache_dir=cache_dir,
        use_cache=use_cache,
        max_file_bytes=max_file_bytes,
        workers=workers,
        parallel_min_bytes=parallel_min_bytes,
        render=True,
    )
    return catalog, join(files)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off for the block (as it was before, after it).

    Loading a catalog allocates millions of containers and frees none of them; each of the
    collector's passes walks every one, so a load with it on costs more than linearly in the
    catalog's size (a third of a warm reload at today's sizes; twice the time at ten times
    them). Callers building on a loaded catalog (validation, indexes) pause it too.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load(root: str, **options: Any) -> tuple[Catalog, list[FileLines]]:
    with gc_paused():
        return _load_directory(root, **options)


def _load_directory(
    root: str,
    *,
    name: str | None,
    cache_dir: str | None,
    use_cache: bool,
    max_file_bytes: int,
    workers: int | None,
    parallel_min_bytes: int,
    render: bool,
) -> tuple[Catalog, list[FileLines]]:
    if not os.path.isdir(root):
        what = "does not exist" if not os.path.exists(root) else "is not a directory"
        raise CatalogLoadError([Problem(f"{root} {what}", io=True)])
    files, problems = list_catalog_files(root, max_file_bytes=max_file_bytes)
    real_root = real_path(root)  # where list_catalog_files found the files
    directory = cache_dir or parsed_cache.default_cache_dir()
    cached = parsed_cache.read(directory, root) if use_cache else parsed_cache.FileCache()
    hits: dict[str, parsed_cache.FileEntry] = {}
    for ref in files:
        hit = cached.get(ref.relpath, ref.signature, lines=render)
        if hit is not None:
            hits[ref.relpath] = hit
    misses = [ref for ref in files if ref.relpath not in hits]
    loaded = iter(
        load_files(
            real_root,
            misses,
            functools.partial(_load_file, render=render),
            max_file_bytes=max_file_bytes,
            keep_blobs=use_cache,
            workers=workers,
            min_bytes=parallel_min_bytes,
        )
    )
    fresh = parsed_cache.FileCache()
    to_pack: list[tuple[CatalogFile, list[CatalogObject], FileLines | None]] = []
    objects: list[CatalogObject] = []
    rendered: list[FileLines] = []
    for ref in files:  # in file order: objects and problems as one process finds them
        hit = hits.get(ref.relpath)
        if hit is not None:
            fresh.files[ref.relpath] = (ref.signature, cached.files[ref.relpath][1])
            objects.extend(hit[0])
            if hit[1] is not None:
                rendered.append(hit[1])
            continue
        result = next(loaded)
        if result.problems:
            problems.extend(result.problems)
            continue
        if result.blob is not None:  # from a worker, already pickled
            fresh.files[ref.relpath] = (ref.signature, result.blob)
        else:  # loaded here: pickled only if the cache is written (not for a failed load)
            to_pack.append((ref, result.objects, result.lines))
        objects.extend(result.objects)
        if result.lines is not None:
            rendered.append(result.lines)
    if problems:
        raise CatalogLoadError(problems)
    if use_cache and (misses or fresh.files.keys() != cached.files.keys()):
        for ref, file_objects, lines in to_pack:
            fresh.files[ref.relpath] = (ref.signature, parsed_cache.pack_entry(file_objects, lines))
        parsed_cache.write(directory, root, fresh)
    name = name if name is not None else os.path.basename(os.path.abspath(root))
    return assemble(objects, name), rendered


def _load_file(
    root: str, ref: CatalogFile, max_file_bytes: int, *, render: bool
) -> tuple[list[CatalogObject], list[Problem], FileLines | None]:
    try:
        data = read_bytes(
            root, ref.path, max_bytes=max_file_bytes, walked=True, expect=(ref.device, ref.inode)
        )
    except RefusedFile as err:
        return [], [Problem(err.message, Origin(ref.relpath), io=err.io)], None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return (
            [],
            [
                Problem(
                    f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})",
                    Origin(ref.relpath, line),
                )
            ],
            None,
        )
    del data  # keep one copy of a large file in memory, not two
    parsed = parse_text(text)
    del text
    objects, problems = _decode(parsed, ref.relpath)
    if problems or not render:
        return objects, problems, None
    return objects, problems, render_file(blob for blob, _ in parsed.objects)


def load_file_objects(text: str, relpath: str) -> tuple[list[CatalogObject], list[Problem]]:
    """Decode the objects of one file's text; ``relpath`` names it in origins and problems."""
    return _decode(parse_text(text), relpath)


def _decode(parsed: ParsedFile, relpath: str) -> tuple[list[CatalogObject], list[Problem]]:
    problems = [Problem(msg, Origin(relpath, line)) for line, msg in parsed.problems]
    objects: list[CatalogObject] = []
    for blob, line in parsed.objects:
        origin = Origin(relpath, line)
        try:
            objects.append(decode_object(blob, origin))
        except DecodeError as err:
            problems.append(Problem(str(err), origin))
    problems.sort(key=lambda p: p.origin.line if p.origin else 0)
    return objects, problems


def load_objects(objects: Iterable[tuple[Any, Origin]], *, name: str = "") -> Catalog:
    """Build a catalog from decoded FBC objects (dicts), each with where it came from.

    For sources that receive objects over the wire (catalogd's JSON lines, gRPC). Raises
    CatalogLoadError listing every object that cannot be decoded.
    """
    out: list[CatalogObject] = []
    problems: list[Problem] = []
    for blob, origin in objects:
        try:
            out.append(decode_object(blob, origin))
        except DecodeError as err:
            problems.append(Problem(str(err), origin))
    if problems:
        raise CatalogLoadError(problems)
    return assemble(out, name)


def assemble(objects: Iterable[CatalogObject], name: str) -> Catalog:
    """Group decoded FBC objects into a catalog called ``name``, in the order given."""
    catalog = Catalog(name=name)
    for obj in objects:
        if isinstance(obj, Bundle):
            catalog.bundles.append(obj)
        elif isinstance(obj, Channel):
            catalog.channels.append(obj)
        elif isinstance(obj, Package):
            catalog.packages.append(obj)
        elif isinstance(obj, Deprecation):
            catalog.deprecations.append(obj)
        elif isinstance(obj, Meta):
            catalog.others.append(obj)
    return catalog
