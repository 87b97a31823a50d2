"""Find the files of a catalog directory as opm does, with the safety rules opm lacks.

Every regular file under the root is part of the catalog, whatever its name, except ``.indexignore``
files and the files their gitignore-style patterns exclude (a pattern applies below the directory
holding its ``.indexignore``; later, deeper files win, as with ``github.com/joelanford/ignore``).
Files are listed in lexical order. Symbolic links to files inside the root are followed; links that
leave the root, dangle, loop, or point at directories are reported, as are files over the size
limit. Called by :mod:`resolver.catalog.load`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import pathspec

from resolver.catalog.errors import Problem
from resolver.catalog.model import Origin

INDEX_IGNORE = ".indexignore"
DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest catalog file accepted (real per-package files are < 5 MiB; whole rendered catalogs in
one file reach tens of MiB)."""


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
    return Problem(message, Origin(relpath), io=True)


def list_catalog_files(
    root: str, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[list[CatalogFile], list[Problem]]:
    """List the catalog files under ``root`` in lexical order, with every problem found."""
    real_root = os.path.realpath(root)
    problems: list[Problem] = []
    candidates: list[tuple[str, str]] = []
    ignores: list[tuple[str, pathspec.GitIgnoreSpec]] = []

    def walk(directory: str, rel: str) -> None:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name.encode("utf-8", "surrogateescape"))
        except OSError as err:
            problems.append(_io_problem(rel or ".", f"cannot read directory: {err.strerror}"))
            return
        for entry in entries:
            relpath = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as err:
                problems.append(_io_problem(relpath, f"cannot stat: {err.strerror}"))
                continue
            if is_dir:
                walk(entry.path, relpath)
            elif entry.name == INDEX_IGNORE:
                spec = _read_ignore(entry.path, relpath, problems)
                if spec is not None:
                    ignores.append((rel, spec))
            else:
                candidates.append((relpath, entry.path))

    walk(real_root, "")
    files = []
    for relpath, path in candidates:
        if _ignored(relpath, ignores):
            continue
        ref = _stat_file(real_root, relpath, path, max_file_bytes, problems)
        if ref is not None:
            files.append(ref)
    return files, problems


def _read_ignore(path: str, relpath: str, problems: list[Problem]) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln.strip() for ln in f]
    except (OSError, UnicodeDecodeError) as err:
        problems.append(_io_problem(relpath, f"cannot read .indexignore: {err}"))
        return None
    return pathspec.GitIgnoreSpec.from_lines([ln for ln in lines if ln and not ln.startswith("#")])


def _ignored(relpath: str, ignores: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
    # The last .indexignore (in walk order) whose patterns say anything about the file decides.
    for domain, spec in reversed(ignores):
        if domain:
            if not relpath.startswith(domain + "/"):
                continue
            sub = relpath[len(domain) + 1 :]
        else:
            sub = relpath
        result = spec.check_file(sub)
        if result.include is not None:
            return bool(result.include)
    return False


def _stat_file(
    real_root: str, relpath: str, path: str, max_file_bytes: int, problems: list[Problem]
) -> CatalogFile | None:
    try:
        lst = os.lstat(path)
        if stat.S_ISLNK(lst.st_mode):
            target = os.path.realpath(path)
            if os.path.commonpath([real_root, target]) != real_root:
                problems.append(
                    _io_problem(relpath, f"symbolic link leaves the catalog root (-> {target})")
                )
                return None
        st = os.stat(path)
    except OSError as err:
        if err.errno == 40:  # ELOOP
            problems.append(_io_problem(relpath, "symbolic link loop"))
        else:
            problems.append(_io_problem(relpath, f"cannot stat: {err.strerror}"))
        return None
    if stat.S_ISDIR(st.st_mode):
        problems.append(
            _io_problem(relpath, "symbolic link to a directory: not followed (opm cannot read it)")
        )
        return None
    if not stat.S_ISREG(st.st_mode):
        problems.append(_io_problem(relpath, "not a regular file"))
        return None
    if st.st_size > max_file_bytes:
        problems.append(
            Problem(
                f"file is {st.st_size:,} bytes, over the {max_file_bytes:,}-byte limit for one "
                "catalog file",
                Origin(relpath),
            )
        )
        return None
    return CatalogFile(relpath, path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
