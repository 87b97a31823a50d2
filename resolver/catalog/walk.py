"""Find the files of a catalog directory as opm does, with the safety rules opm lacks.

Every regular file under the root is part of the catalog, whatever its name, except ``.indexignore``
files and the files their gitignore-style patterns exclude (a pattern applies below the directory
holding its ``.indexignore``; later, deeper files win, as with ``github.com/joelanford/ignore``).
Files are listed in lexical order. Every file, ``.indexignore`` files included, passes
:mod:`resolver.catalog.guard`: symbolic links to files inside the root are followed; links that
leave the root, dangle, loop, or point at directories are reported, as are FIFOs, sockets,
devices and files over the size limit; ``.indexignore`` files have the limits of
:mod:`resolver.catalog.ignore`. Directories are walked with an explicit stack (no recursion
limit on deep trees), and at most :data:`MAX_ENTRIES` entries are listed: a catalog of a million
empty files would cost hundreds of megabytes before a single file is read. Called by
:mod:`resolver.catalog.load`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from resolver.catalog.errors import Problem
from resolver.catalog.guard import DEFAULT_MAX_FILE_BYTES, RefusedFile, inspect, real_path
from resolver.catalog.ignore import (
    INDEX_IGNORE,
    IgnoreBudget,
    IgnoreError,
    IgnoreRules,
    read_ignore,
)
from resolver.catalog.model import Origin
from resolver.safefiles import shown

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "INDEX_IGNORE",
    "MAX_ENTRIES",
    "TOO_MANY_ENTRIES",
    "CatalogFile",
    "list_catalog_files",
]

MAX_ENTRIES = 100_000
"""Files and directories a catalog directory may hold, ignored ones included (the real catalogs
here hold at most 300; each entry costs about half a kilobyte while the directory is walked)."""

TOO_MANY_ENTRIES = "the catalog directory holds more than {limit:,} files and directories"
"""The start of the walk's refusal past ``max_entries`` (the loader recognizes it)."""


@dataclass(frozen=True, slots=True)
class CatalogFile:
    """One file to read: its path relative to the root (``/``-separated), absolute path, stat."""

    relpath: str
    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int

    @property
    def signature(self) -> tuple[int, int, int, int]:
        """What identifies this version of the file for the parsed-catalog cache."""
        return (self.size, self.mtime_ns, self.inode, self.device)


def _io_problem(relpath: str, message: str) -> Problem:
    relpath = shown(relpath)  # a tree 3,000 deep has paths of 6,000 characters
    return Problem(message, Origin(relpath), io=True)


def _sort_key(entry: os.DirEntry[str]) -> bytes:
    return entry.name.encode("utf-8", "surrogateescape")


def list_catalog_files(
    root: str, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, max_entries: int = MAX_ENTRIES
) -> tuple[list[CatalogFile], list[Problem]]:
    """List the catalog files under ``root`` in lexical order, with every problem found.

    A directory holding more than ``max_entries`` files and directories is refused as soon as
    the walk counts that many: no file is returned, and the one problem says so.
    """
    real_root = real_path(root)
    problems: list[Problem] = []
    candidates: list[tuple[str, str]] = []
    ignores: dict[str, tuple[int, IgnoreRules]] = {}
    budget = IgnoreBudget()
    # Depth first, entries in lexical order: a stack of (directory, relpath) still to list and
    # of the not-yet-visited entries of the directories being listed.
    stack: list[tuple[str, list[os.DirEntry[str]]]] = []
    listed = 0

    def enter(directory: str, rel: str) -> bool:
        """List ``directory``; False when the walk has listed more than ``max_entries``."""
        nonlocal listed
        entries: list[os.DirEntry[str]] = []
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    listed += 1
                    if listed > max_entries:
                        return False
                    entries.append(entry)
        except OSError as err:
            problems.append(_io_problem(rel or ".", f"cannot read directory: {err.strerror}"))
            return True
        entries.sort(key=_sort_key, reverse=True)
        stack.append((rel, entries))
        return True

    def too_many() -> tuple[list[CatalogFile], list[Problem]]:
        message = TOO_MANY_ENTRIES.format(limit=max_entries)
        return [], [Problem(f"{message} (ignored ones included); refusing it")]

    if not enter(real_root, ""):
        return too_many()
    while stack:
        rel, entries = stack[-1]
        if not entries:
            stack.pop()
            continue
        entry = entries.pop()
        relpath = f"{rel}/{entry.name}" if rel else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as err:
            problems.append(_io_problem(relpath, f"cannot stat: {err.strerror}"))
            continue
        if is_dir:
            if not enter(entry.path, relpath):
                return too_many()
        elif entry.name == INDEX_IGNORE:
            try:
                ignores[rel] = (
                    len(ignores),
                    read_ignore(real_root, entry.path, budget, walked=True),
                )
            except IgnoreError as err:
                origin = Origin(relpath, err.line) if err.line else Origin(relpath)
                problems.append(Problem(err.message, origin, io=err.io))
        else:
            candidates.append((relpath, entry.path))

    files = []
    for relpath, path in candidates:
        if _ignored(relpath, ignores):
            continue
        ref = _stat_file(real_root, relpath, path, max_file_bytes, problems)
        if ref is not None:
            files.append(ref)
    return files, problems


def _ignored(relpath: str, ignores: dict[str, tuple[int, IgnoreRules]]) -> bool:
    if not ignores:
        return False
    # The ignore files of the file's directory and its ancestors apply; the last one read (in
    # walk order) whose patterns say anything about the file decides.
    applicable: list[tuple[int, str, IgnoreRules]] = []
    domain = relpath
    while domain:
        domain = domain.rpartition("/")[0]
        found = ignores.get(domain)
        if found is not None:
            applicable.append((found[0], domain, found[1]))
    for _, domain, rules in sorted(applicable, key=lambda a: a[0], reverse=True):
        verdict = rules.verdict(relpath[len(domain) + 1 :] if domain else relpath)
        if verdict is not None:
            return verdict
    return False


def _stat_file(
    real_root: str, relpath: str, path: str, max_file_bytes: int, problems: list[Problem]
) -> CatalogFile | None:
    try:
        st = inspect(real_root, path, max_bytes=max_file_bytes, walked=True)
    except RefusedFile as err:
        problems.append(Problem(err.message, Origin(relpath), io=err.io))
        return None
    return CatalogFile(relpath, path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
