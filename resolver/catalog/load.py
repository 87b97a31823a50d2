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

What a catalog may cost in memory is bounded by what came in: each file has a budget
(:func:`file_budget`, :data:`MEMORY_PER_BYTE` times its size on disk plus :data:`MEMORY_PER_FILE`),
charged with its text's estimated cost before it is parsed (:func:`resolver.safedata.text_cost`:
a file of millions of tiny objects is refused in the time it takes to read it, not after minutes
of parsing and a MemoryError) and with what YAML aliases add while it is parsed, in its documents
and in the manifests inlined in them; and the whole catalog has a ceiling
(:data:`MEMORY_CEILING`), checked before any parse. The estimate is conservative: the real
catalogs of 15-25 MB estimate 1.1 to 5.8 times their size and take 1.1 to 2.7 times it.

Called by the CLI (``pivoter catalog validate|render``), the catalog sources and servers.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Iterable, Iterator
from typing import Any

from resolver import safedata
from resolver.catalog import cache as parsed_cache
from resolver.catalog.decode import CatalogObject, DecodeError, decode_object
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.guard import RefusedFile, read_bytes, real_path
from resolver.catalog.jsonl import Body, FileLines, join, render_file
from resolver.catalog.model import Bundle, Catalog, Channel, Deprecation, Meta, Origin, Package
from resolver.catalog.parallel import PARALLEL_MIN_BYTES, load_files
from resolver.catalog.parse import ParsedFile, parse_text
from resolver.catalog.walk import (
    DEFAULT_MAX_FILE_BYTES,
    TOO_MANY_ENTRIES,
    CatalogFile,
    list_catalog_files,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "EARLY_REFUSAL",
    "MEMORY_CEILING",
    "MEMORY_PER_BYTE",
    "MEMORY_PER_FILE",
    "PARSED_FIRST_DOCUMENTS",
    "CatalogTooLarge",
    "charge_message",
    "charge_received",
    "file_budget",
    "gc_paused",
    "load_directory",
    "load_file_objects",
    "load_objects",
    "load_served",
    "message_budget",
    "received_budget",
]


MEMORY_PER_BYTE = 16
"""A catalog file may cost (estimated) this many times its size on disk in memory, plus
:data:`MEMORY_PER_FILE`. Real catalog files estimate at most 10.8 times (a file of CSVs whose
``alm-examples`` strings are dense JSON); files of tiny objects, 21 and more."""

MEMORY_PER_FILE = 16 << 10
"""What any catalog file may cost besides :data:`MEMORY_PER_BYTE` times its size (a tiny file's
one object costs more than 16 times its few bytes)."""

EARLY_REFUSAL = 32 << 20
"""A file estimated over its budget is refused before it is parsed, unless the estimate is at most
this and the file holds at most :data:`PARSED_FIRST_DOCUMENTS` documents: such a file is usually
one huge document that is refused for a reason that says more (nesting, an alias bomb), so it is
parsed first and refused for its cost only if nothing else is wrong (its parse costs at most
this much). A file of many small objects is refused before its parse, in the time it takes to
read it."""

PARSED_FIRST_DOCUMENTS = 16
"""See :data:`EARLY_REFUSAL` (documents counted as lines starting ``---`` or ``{`` and ``}{``)."""

MEMORY_CEILING = 512 << 20
"""What a whole catalog may cost (estimated), whatever its size: about 90 MB on disk of catalogs
as dense as the real ones here (which estimate 5 to 6 times their size and really take half of
that or less), more when they inline manifests."""


class CatalogTooLarge(CatalogLoadError):
    """A catalog refused as a whole, before any file was parsed: more than its memory ceiling
    (estimated), or more entries than a catalog directory may hold. Loading its files one by one
    instead would take what the refusal saves."""


def file_budget(size: int, *, limit: int | None = None) -> safedata.MemoryBudget:
    """The memory budget of one catalog file of ``size`` bytes: :data:`MEMORY_PER_BYTE` times its
    size plus :data:`MEMORY_PER_FILE`, or ``limit`` (its share of the catalog's ceiling)."""
    if limit is not None:
        return safedata.MemoryBudget(limit, "its share of the catalog's memory ceiling")
    what = f"its memory budget ({MEMORY_PER_BYTE} times its size on disk plus 16 KiB)"
    return safedata.MemoryBudget(MEMORY_PER_BYTE * size + MEMORY_PER_FILE, what)


def received_budget() -> safedata.MemoryBudget:
    """The memory budget of a catalog that arrives piece by piece (catalogd's JSON lines, gRPC
    messages): :data:`MEMORY_PER_FILE` to start with, grown by :func:`charge_received` with every
    piece, up to :data:`MEMORY_CEILING`; give it to :func:`load_objects` too."""
    what = (
        f"the memory budget of a received catalog ({MEMORY_PER_BYTE} times what arrived plus "
        f"16 KiB, at most {_mib(MEMORY_CEILING)})"
    )
    return safedata.MemoryBudget(MEMORY_PER_FILE, what)


def charge_received(budget: safedata.MemoryBudget, text: str | bytes) -> None:
    """Grow ``budget`` (from :func:`received_budget`) by what ``text``, one piece just received,
    may cost (:data:`MEMORY_PER_BYTE` times its length, the ceiling at most), then charge its
    estimated cost, before it is parsed. Raises :class:`resolver.safedata.BudgetExceeded` (one
    line) when what arrived so far would cost more: a stream of tiny objects is refused within
    its first kilobytes, whatever its length."""
    budget.limit = min(MEMORY_CEILING, budget.limit + MEMORY_PER_BYTE * len(text))
    cost = safedata.text_cost(text)
    budget.charge(cost, f"what arrived would take about {_mib(budget.spent + cost)} in memory")


MESSAGE_OVERHEAD = 1 << 10
"""What one protobuf message of a registry (gRPC) catalog costs besides :data:`MESSAGE_PER_BYTE`
times its size: the message object, then the dicts made of it."""

MESSAGE_PER_BYTE = 4
"""A decoded registry message costs about this many times its bytes (its strings, then the same
text again in the catalog objects made of it)."""


def message_budget() -> safedata.MemoryBudget:
    """The memory budget of a catalog received as protobuf messages (operator-registry's gRPC
    API): :data:`MEMORY_CEILING` for the estimated cost of every message (:func:`charge_message`);
    give it to :func:`load_objects` too."""
    what = (
        f"the memory ceiling of a received catalog ({_mib(MEMORY_CEILING)}, each message counted "
        f"{MESSAGE_PER_BYTE} times its size plus 1 KiB)"
    )
    return safedata.MemoryBudget(MEMORY_CEILING, what)


def charge_message(budget: safedata.MemoryBudget, data: bytes) -> None:
    """Charge the estimated cost of one message just received (before it is decoded). Raises
    :class:`resolver.safedata.BudgetExceeded`: a stream of millions of tiny messages is refused at
    the ceiling, not after it has taken gigabytes."""
    cost = MESSAGE_PER_BYTE * len(data) + MESSAGE_OVERHEAD
    budget.charge(cost, f"what arrived would take about {_mib(budget.spent + cost)} in memory")


def load_directory(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    cache_dir: str | None = None,
    use_cache: bool = True,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    workers: int | None = None,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    max_memory: int = MEMORY_CEILING,
) -> Catalog:
    """Load the FBC directory ``path``; ``name`` defaults to the directory's base name.

    Unchanged files are taken from the parsed-catalog cache (``cache_dir``, default
    :func:`resolver.catalog.cache.default_cache_dir`) unless ``use_cache`` is false. The other
    files are parsed by ``workers`` processes (default: one per core; 1 parses here) when they
    add up to ``parallel_min_bytes`` or more; the result is the same either way. ``max_memory``
    is the catalog's memory ceiling (estimated; see the module's docstring).
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
        max_memory=max_memory,
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
    max_memory: int = MEMORY_CEILING,
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
        max_memory=max_memory,
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
    max_memory: int,
) -> tuple[Catalog, list[FileLines]]:
    if not os.path.isdir(root):
        what = "does not exist" if not os.path.exists(root) else "is not a directory"
        raise CatalogLoadError([Problem(f"{root} {what}", io=True)])
    files, problems = list_catalog_files(root, max_file_bytes=max_file_bytes)
    if not files and any(p.message.startswith(_TOO_MANY) for p in problems):
        raise CatalogTooLarge(problems)
    real_root = real_path(root)  # where list_catalog_files found the files
    shares = _memory_shares(real_root, files, max_file_bytes, max_memory, problems)
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
            functools.partial(_load_file, render=render, shares=shares),
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


def _memory_shares(
    real_root: str,
    files: list[CatalogFile],
    max_file_bytes: int,
    ceiling: int,
    problems: list[Problem],
) -> dict[str, int]:
    """Check the catalog against its memory ceiling before any file is parsed; return the budget
    of each file when its own (:func:`file_budget`) could add up past the ceiling, else nothing.

    When the files' own budgets add up to the ceiling or less (every catalog under about 32 MB),
    nothing is read here. Otherwise each file's text is read and its cost estimated (about 1 ms
    per MB; hits of the parsed-catalog cache too, so a warm load decides as a cold one): a
    catalog estimated over the ceiling is refused at once, and each file's budget is its
    estimate plus its share of what is left, in proportion to its size, so that the budgets
    together stay within the ceiling.
    """
    bound = sum(MEMORY_PER_BYTE * ref.size + MEMORY_PER_FILE for ref in files)
    if bound <= ceiling:
        return {}
    costs: dict[str, int] = {}
    for ref in files:
        try:
            data = read_bytes(
                real_root,
                ref.path,
                max_bytes=max_file_bytes,
                walked=True,
                expect=(ref.device, ref.inode),
            )
        except RefusedFile:
            continue  # reported when the file is loaded
        costs[ref.relpath] = safedata.text_cost(data)
        del data
    total = sum(costs.values())
    disk = sum(ref.size for ref in files)
    if total > ceiling:
        message = (
            f"the catalog would take about {_mib(total)} in memory ({len(files):,} files, "
            f"{_mib(disk)} on disk), more than its ceiling of {_mib(ceiling)}: refusing it"
        )
        raise CatalogTooLarge([*problems, Problem(message)])
    left = ceiling - total
    return {
        ref.relpath: min(
            MEMORY_PER_BYTE * ref.size + MEMORY_PER_FILE,
            costs.get(ref.relpath, 0) + left * ref.size // max(disk, 1),
        )
        for ref in files
    }


_TOO_MANY = TOO_MANY_ENTRIES.split("{", 1)[0]


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def _load_file(
    root: str, ref: CatalogFile, max_file_bytes: int, *, render: bool, shares: dict[str, int]
) -> tuple[list[CatalogObject], list[Problem], FileLines | None]:
    try:
        data = read_bytes(
            root, ref.path, max_bytes=max_file_bytes, walked=True, expect=(ref.device, ref.inode)
        )
    except RefusedFile as err:
        return [], [Problem(err.message, Origin(ref.relpath), io=err.io)], None
    budget = file_budget(ref.size, limit=shares.get(ref.relpath))
    refused = _charge_text(budget, data, ref.size)
    if refused is not None and refused[1]:
        return [], [Problem(refused[0], Origin(ref.relpath))], None
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
    with safedata.spending(budget):
        parsed = parse_text(text)
        del text
        objects, problems = _decode(parsed, ref.relpath)
    if refused is not None and not problems:
        return [], [Problem(refused[0], Origin(ref.relpath))], None
    if problems or not render:
        return objects, problems, None
    return objects, problems, render_file(blob for blob, _ in parsed.objects)


def _charge_text(
    budget: safedata.MemoryBudget, data: str | bytes, size: int
) -> tuple[str, bool] | None:
    """Charge ``budget`` with the estimated cost of parsing ``data`` (a file of ``size`` bytes).

    Past the budget, return the one-line refusal and whether to refuse before parsing (see
    :data:`EARLY_REFUSAL`); else None.
    """
    cost = safedata.text_cost(data)
    try:
        budget.charge(
            cost,
            f"parsed, its objects would take about {_mib(cost)} in memory, "
            f"{cost / max(size, 1):.0f} times its size (too many small objects)",
        )
    except safedata.BudgetExceeded as err:
        return err.reason, cost > EARLY_REFUSAL or _document_count(data) > PARSED_FIRST_DOCUMENTS
    return None


def _document_count(data: str | bytes) -> int:
    """About how many documents or objects ``data`` holds (fast: the sequences are rare)."""
    if isinstance(data, bytes):
        return 1 + data.count(b"\n---") + data.count(b"\n{") + data.count(b"}{")
    return 1 + data.count("\n---") + data.count("\n{") + data.count("}{")


def load_file_objects(text: str, relpath: str) -> tuple[list[CatalogObject], list[Problem]]:
    """Decode the objects of one file's text; ``relpath`` names it in origins and problems.

    The text has the memory budget of a catalog file of its length (:func:`file_budget`).
    """
    budget = file_budget(len(text))
    refused = _charge_text(budget, text, len(text))
    if refused is not None and refused[1]:
        return [], [Problem(refused[0], Origin(relpath))]
    with safedata.spending(budget):
        objects, problems = _decode(parse_text(text), relpath)
    if refused is not None and not problems:
        return [], [Problem(refused[0], Origin(relpath))]
    return objects, problems


def _decode(parsed: ParsedFile, relpath: str) -> tuple[list[CatalogObject], list[Problem]]:
    problems = [Problem(msg, Origin(relpath, line)) for line, msg in parsed.problems]
    objects: list[CatalogObject] = []
    for blob, line in parsed.objects:
        origin = Origin(relpath, line)
        try:
            objects.append(decode_object(blob, origin))
        except DecodeError as err:
            problems.append(Problem(str(err), origin))
            budget = safedata.current_budget()
            if budget is not None and budget.spent_out:
                break  # the file's budget is spent: one problem for it, not one per object
    problems.sort(key=lambda p: p.origin.line if p.origin else 0)
    return objects, problems


def load_objects(
    objects: Iterable[tuple[Any, Origin]],
    *,
    name: str = "",
    budget: safedata.MemoryBudget | None = None,
) -> Catalog:
    """Build a catalog from decoded FBC objects (dicts), each with where it came from.

    For sources that receive objects over the wire (catalogd's JSON lines, gRPC); ``budget``
    (the one they charged each text with, see :func:`file_budget`) pays for what aliases add in
    inlined manifests. Raises CatalogLoadError listing every object that cannot be decoded.
    """
    out: list[CatalogObject] = []
    problems: list[Problem] = []
    with safedata.spending(budget):
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
