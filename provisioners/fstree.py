"""Walk and remove directory trees of bundles without recursion and without following links.

:func:`walk_tree` lists every entry below a root, depth first, with an explicit stack and ``lstat``
(a link is reported as a link, never followed or entered), and refuses in one line what no bundle
the unpacker admits could hold: more than ``max_depth`` directories deep (3,000 levels made the
store's walk fail with a raw ``OSError``: path too long), more than ``max_entries`` entries, a root
that is a link. Refusals are :class:`resolver.safefiles.RefusedFile` (an ``OSError``), naming the
entry; the content store and the helm format turn them into their own errors.

:func:`remove_tree` removes a tree of any depth and path length.

``shutil.rmtree`` recurses once per directory level on Python 3.11 (a bundle 1000 directories deep
raises ``RecursionError``, which ``ignore_errors`` does not catch) and gives up on paths longer than
the system's limit. :func:`remove_tree` walks with an explicit stack and one open directory
descriptor at a time (it climbs back with ``..`` and checks each directory's identity), so depth
and path length do not matter and a symlink is removed, never followed. An entry it cannot remove
is skipped and the rest of the tree still goes; the failures are reported together at the end in
one :class:`TreeRemovalError`. Used by the content store and the unpacker.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from provisioners.errors import ProvisionerError
from resolver.safefiles import RefusedFile, shown

__all__ = ["MAX_DEPTH", "TreeEntry", "TreeRemovalError", "remove_tree", "walk_tree"]

MAX_DEPTH = 128
"""Directories an entry may be nested in: the unpacker's ``max_depth`` (real bundles: under 10)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN_FAILURES = 3


class TreeRemovalError(ProvisionerError):
    """Some entries of a tree could not be removed (the rest was)."""


@dataclass
class _Level:
    name: str  # in the parent directory
    identity: tuple[int, int]  # st_dev, st_ino
    names: list[str]  # entries still to remove
    rel: str  # relative path with a trailing "/" (empty for the top)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def remove_tree(path: Path | str) -> None:
    """Remove ``path`` and everything below it (nothing if it does not exist).

    Raises :class:`TreeRemovalError` naming what could not be removed, after removing the rest.
    """
    top = os.fspath(path)
    try:
        info = os.lstat(top)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(top)
        return
    failures: list[str] = []
    fd = os.open(top, _DIR_FLAGS)
    try:
        stack = [_Level("", _identity(os.fstat(fd)), os.listdir(fd), "")]
        while stack:
            level = stack[-1]
            if level.names:
                name = level.names.pop()
                child = _descend(fd, name, level.rel, failures)
                if child is not None:
                    child_fd, child_level = child
                    os.close(fd)
                    fd = child_fd
                    stack.append(child_level)
                continue
            stack.pop()
            if not stack:
                break
            # Climb back up and check that it is the directory we came from.
            parent_fd = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent_fd
            if _identity(os.fstat(fd)) != stack[-1].identity:
                raise TreeRemovalError(
                    f"{top}: {stack[-1].rel or '.'} was moved while the tree was being removed"
                )
            try:
                os.rmdir(level.name, dir_fd=fd)
            except OSError as exc:
                failures.append(f"{level.rel.rstrip('/')}: {exc.strerror}")
    finally:
        os.close(fd)
    try:
        os.rmdir(top)
    except OSError as exc:
        failures.append(f".: {exc.strerror}")
    if failures:
        shown = "; ".join(failures[:_SHOWN_FAILURES])
        more = (
            f" and {len(failures) - _SHOWN_FAILURES} more"
            if len(failures) > _SHOWN_FAILURES
            else ""
        )
        raise TreeRemovalError(f"cannot remove all of {top}: {shown}{more}")


def _descend(fd: int, name: str, rel: str, failures: list[str]) -> tuple[int, _Level] | None:
    """Unlink ``name`` in directory ``fd``, or open it (a directory) and return its level."""
    path = rel + name
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=fd)
            return None
        child_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None  # removed meanwhile: the goal
    except OSError as exc:
        failures.append(f"{path}: {exc.strerror}")
        return None
    try:
        if _identity(os.fstat(child_fd)) != _identity(info):
            raise OSError(0, "replaced while the tree was being removed")
        names = os.listdir(child_fd)
    except OSError as exc:
        os.close(child_fd)
        failures.append(f"{path}: {exc.strerror}")
        return None
    return child_fd, _Level(name, _identity(info), names, path + "/")


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of a walked tree."""

    rel: str
    """Its path relative to the root, ``/``-separated (a directory's without a trailing ``/``)."""
    path: str
    """Its path on disk (the root joined with ``rel``)."""
    info: os.stat_result
    """Its ``lstat``: a symbolic link is a link here, never what it points to."""


def walk_tree(
    root: Path | str,
    *,
    max_depth: int = MAX_DEPTH,
    max_entries: int | None = None,
    tree: str = "bundle",
) -> Iterator[TreeEntry]:
    """Every entry below ``root``: each directory's entries in bytewise order of their names, then
    its subdirectories' in the same order (the content store's digest depends on this order).

    Without recursion and without following links: a link is yielded, not entered or resolved.
    Raises :class:`~resolver.safefiles.RefusedFile`, one line naming the entry (``tree`` names the
    kind of tree), when ``root`` is a link or not a directory, an entry is nested more than
    ``max_depth`` directories deep, there are more than ``max_entries`` entries, or a directory
    cannot be listed or an entry cannot be stat'ed (a path too long for the system, say).
    """
    top = os.fspath(root)
    try:
        info = os.lstat(top)
    except OSError as err:
        raise RefusedFile(f"the {tree} root {shown(top)}: cannot stat: {err.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise RefusedFile(f"the {tree} root {shown(top)} is a symbolic link: not followed")
    if not stat.S_ISDIR(info.st_mode):
        raise RefusedFile(f"the {tree} root {shown(top)} is not a directory")
    count = 0
    stack: list[tuple[str, str, int]] = [("", top, 0)]
    while stack:
        prefix, directory, depth = stack.pop()
        try:
            names = sorted(os.listdir(directory), key=os.fsencode)
        except OSError as err:
            where = shown(prefix.rstrip("/") or ".")
            raise RefusedFile(f"{where}: cannot read directory: {err.strerror}") from None
        if names and depth >= max_depth:
            raise RefusedFile(
                f"{shown(prefix + names[0])} is nested more than {max_depth} directories deep "
                f"in the {tree}; flatten its directory tree",
                io=False,
            )
        subdirs: list[tuple[str, str, int]] = []
        for name in names:
            rel = prefix + name
            path = os.path.join(directory, name)
            try:
                entry = os.lstat(path)
            except OSError as err:
                raise RefusedFile(f"{shown(rel)}: cannot stat: {err.strerror}") from None
            count += 1
            if max_entries is not None and count > max_entries:
                raise RefusedFile(f"more than {max_entries:,} entries in the {tree}", io=False)
            yield TreeEntry(rel, path, entry)
            if stat.S_ISDIR(entry.st_mode):
                subdirs.append((f"{rel}/", path, depth + 1))
        stack.extend(reversed(subdirs))
