"""The one reader of files in trees pivoter does not trust.

Catalog directories, bundle trees (whatever source unpacked them), the content store, helm charts
and registry+v1 metadata are written by someone else. Anyone who can write to such a tree can
plant a FIFO (an ``open`` that never returns), a link to an endless device (``/dev/zero``: a read
that eats all memory), a link to a file outside the tree (a read of something that is not theirs),
a chain of links (Python 3.11's ``realpath`` recurses once per link) or a file far larger than any
real one. Every file of such a tree is opened here, so all of them get the same checks:

* the path, after every symbolic link is resolved (iteratively, at most 40 links as the kernel
  does), must lie inside the tree's root;
* it must be a regular file (not a FIFO, socket, device or directory), checked with ``lstat`` /
  ``stat`` before it is opened and again with ``fstat`` on the descriptor, which is opened with
  ``O_NONBLOCK | O_NOFOLLOW`` (a FIFO or a link swapped in between can neither block nor redirect);
* it must be no larger than the caller's limit, and it is read with that bound: a file that grows
  while it is read is refused, never read without end.

Refusals raise :class:`RefusedFile`, an :class:`OSError` whose text is one line saying what is
wrong (without the path: callers put the file's name in front); ``io`` tells a file-system
problem (a link, a FIFO) from content that is too large. :mod:`resolver.catalog.guard` is this
module with a catalog's defaults; :mod:`provisioners.formats`, :mod:`provisioners.store` and
:mod:`provisioners.fstree` use it for bundle trees. ``tests/unit/test_untrusted_reads.py`` fails
when code in ``resolver/`` or ``provisioners/`` opens a file any other way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "MAX_LINK_HOPS",
    "GuardedFile",
    "RefusedFile",
    "inspect",
    "kind",
    "open_file",
    "read_bytes",
    "read_text",
    "real_path",
    "shown",
]

MAX_LINK_HOPS = 40
"""Links followed in one resolution before giving up, as the kernel does (ELOOP)."""

_CHUNK = 1 << 20
_SHOWN = 120
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)

PathLike = str | os.PathLike[str]


class RefusedFile(OSError):
    """A file of an untrusted tree that is not read; ``str()`` is one line saying why."""

    def __init__(self, message: str, *, io: bool = True) -> None:
        super().__init__(errno.EPERM, message)
        self.message = message
        self.io = io
        """True for a file-system problem (link, FIFO, device); False for a file too large."""

    def __str__(self) -> str:
        return self.message


def shown(path: str) -> str:
    """``path`` for a one-line message: shortened in the middle when long (a tree 3,000
    directories deep has 6,000-character paths)."""
    if len(path) <= _SHOWN:
        return path
    return f"{path[: _SHOWN // 2]}...{path[-_SHOWN // 2 :]}"


def real_path(path: PathLike) -> str:
    """``os.path.realpath`` without recursion, refusing more than 40 links (the kernel's limit).

    Python 3.11's ``realpath`` recurses once per link, so a chain of 1,500 links planted in a
    tree raised RecursionError (and cost quadratic time); this walks the components with an
    explicit stack. A missing component resolves lexically, as ``realpath`` does. Raises
    :class:`OSError` with ``errno.ELOOP`` past the link limit.
    """
    pending = list(reversed(os.path.abspath(os.fspath(path)).split(os.sep)))
    resolved = os.sep
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        try:
            info = os.lstat(candidate)
        except OSError:
            resolved = candidate
            continue
        if not stat.S_ISLNK(info.st_mode):
            resolved = candidate
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", os.fspath(path))
        target = os.readlink(candidate)
        if target.startswith(os.sep):
            resolved = os.sep
        pending.extend(reversed(target.split(os.sep)))
    return resolved


def kind(mode: int) -> str:
    """What a file of ``mode`` is, for a message (``a FIFO``, ``a socket``, ``a device``)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _inside(real_root: str, target: str) -> bool:
    try:
        return os.path.commonpath([real_root, target]) == real_root
    except ValueError:
        return False


def _check_size(size: int, max_bytes: int, what: str) -> None:
    if size > max_bytes:
        raise RefusedFile(
            f"file is {size:,} bytes, over the {max_bytes:,}-byte limit for one {what}", io=False
        )


def inspect(
    root: PathLike,
    path: PathLike,
    *,
    max_bytes: int,
    what: str = "file",
    tree: str = "tree",
    walked: bool = False,
) -> os.stat_result:
    """Check ``path`` (anywhere under ``root``) without opening it; return its ``stat``.

    Raises :class:`RefusedFile` when the path leaves ``root`` through a link, is not a regular
    file, or is over ``max_bytes`` (``what`` names the kind of file and ``tree`` the kind of tree
    in messages: ``manifest file``, ``bundle``); an :class:`OSError` of ``stat`` becomes a
    RefusedFile too. ``walked`` says that ``root`` is already a real path and that ``path`` was
    reached from it through directories that are not links (as a tree walk lists them): then
    only a link as the last component needs resolving, which keeps listing 10,000 files cheap.
    """
    root, path = os.fspath(root), os.fspath(path)
    try:
        real_root = root if walked else real_path(root)
        lst = os.lstat(path)
        link = stat.S_ISLNK(lst.st_mode)
        if link or not walked:
            target = real_path(path)
            if not _inside(real_root, target):
                if link:
                    raise RefusedFile(f"symbolic link leaves the {tree} root (-> {shown(target)})")
                raise RefusedFile(f"{shown(path)} is outside the {tree} root {shown(real_root)}")
        st = os.stat(path) if link else lst
    except RefusedFile:
        raise
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RefusedFile("symbolic link loop") from None
        raise RefusedFile(f"cannot stat: {err.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        if stat.S_ISLNK(lst.st_mode):
            raise RefusedFile("symbolic link to a directory: not followed")
        raise RefusedFile("a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise RefusedFile(f"not a regular file ({kind(st.st_mode)}): not read")
    _check_size(st.st_size, max_bytes, what)
    return st


class GuardedFile:
    """An open descriptor of a checked regular file, read with a bound (from :func:`open_file`)."""

    def __init__(self, fd: int, size: int, max_bytes: int, what: str) -> None:
        self.fd = fd
        self.size = size
        """The size ``fstat`` gave when the file was opened."""
        self.read_so_far = 0
        self._max_bytes = max_bytes
        self._what = what

    def read(self, size: int = _CHUNK) -> bytes:
        """At most ``size`` bytes (b"" at the end); RefusedFile once past the bound."""
        want = min(size, self._max_bytes + 1 - self.read_so_far)
        try:
            chunk = os.read(self.fd, max(want, 1))
        except OSError as err:
            raise RefusedFile(f"cannot read: {err.strerror}") from None
        self.read_so_far += len(chunk)
        if self.read_so_far > self._max_bytes:
            raise RefusedFile(
                f"grew past the {self._max_bytes:,}-byte limit for one {self._what} while being "
                "read",
                io=False,
            )
        return chunk

    def chunks(self, size: int = _CHUNK) -> Iterator[bytes]:
        """The rest of the file in chunks of at most ``size`` bytes."""
        while chunk := self.read(size):
            yield chunk


@contextmanager
def open_file(
    root: PathLike,
    path: PathLike,
    *,
    max_bytes: int,
    what: str = "file",
    tree: str = "tree",
    walked: bool = False,
    expect: tuple[int, int] | None = None,
) -> Iterator[GuardedFile]:
    """Open ``path`` (under ``root``) after :func:`inspect`, for reading with at most ``max_bytes``.

    ``expect`` is the (device, inode) the file had when it was listed: another file there now (a
    directory swapped for a link meanwhile) is refused. Raises :class:`RefusedFile`. For files
    read in a stream (the content store's tar.gz); :func:`read_bytes` reads one whole.
    """
    inspect(root, path, max_bytes=max_bytes, what=what, tree=tree, walked=walked)
    path = os.fspath(path)
    try:
        target = path if walked and not os.path.islink(path) else real_path(path)
        fd = os.open(target, _OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RefusedFile("symbolic link swapped in while reading: not followed") from None
        raise RefusedFile(f"cannot read: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFile(f"not a regular file ({kind(st.st_mode)}): not read")
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise RefusedFile(f"replaced by another file while the {tree} was read: read again")
        _check_size(st.st_size, max_bytes, what)
        yield GuardedFile(fd, st.st_size, max_bytes, what)
    finally:
        os.close(fd)


def read_bytes(
    root: PathLike,
    path: PathLike,
    *,
    max_bytes: int,
    what: str = "file",
    tree: str = "tree",
    walked: bool = False,
    expect: tuple[int, int] | None = None,
) -> bytes:
    """Read ``path`` (under ``root``) whole, with at most ``max_bytes``; see :func:`open_file`.

    Raises :class:`RefusedFile`.
    """
    with open_file(
        root, path, max_bytes=max_bytes, what=what, tree=tree, walked=walked, expect=expect
    ) as file:
        return b"".join(file.chunks())


def read_text(
    root: PathLike,
    path: PathLike,
    *,
    max_bytes: int,
    what: str = "file",
    tree: str = "tree",
    walked: bool = False,
    expect: tuple[int, int] | None = None,
) -> str:
    """:func:`read_bytes` decoded as UTF-8; invalid UTF-8 is a RefusedFile naming the offset."""
    data = read_bytes(
        root, path, max_bytes=max_bytes, what=what, tree=tree, walked=walked, expect=expect
    )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise RefusedFile(
            f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}, line {line})",
            io=False,
        ) from None
