"""Remove a directory tree of any depth and path length, without recursion or following links.

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
from dataclasses import dataclass
from pathlib import Path

from provisioners.errors import ProvisionerError

__all__ = ["TreeRemovalError", "remove_tree"]

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
