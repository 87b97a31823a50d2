"""The one gate every file of a catalog directory passes through before it is read.

A catalog directory is untrusted: anyone who can write to it can plant a FIFO (an ``open`` that
never returns), a link to an endless device (``/dev/zero``: a read that eats all memory), a link
to a file outside the catalog (a read of something that is not theirs), or a file far larger than
any catalog file. :func:`inspect` and :func:`read_bytes` refuse all of these, the same way for
catalog files, ``.indexignore`` files, ``catalog test`` templates and expectations, and the
catalog server's JSONL rendering:

* the path, after every symbolic link is resolved, must lie inside the catalog root;
* it must be a regular file (not a FIFO, socket, device or directory), checked with ``stat``
  before it is opened and again with ``fstat`` on the opened descriptor (opened with
  ``O_NONBLOCK | O_NOFOLLOW``, so a FIFO or a link swapped in between cannot block or redirect);
* it must be no larger than the caller's limit, and it is read with that bound (a file that
  grows while it is read is refused, never read without end).

Refusals raise :class:`RefusedFile`, an :class:`OSError` whose text is one line saying what is
wrong; ``io`` says whether it is a file-system problem (bad link, FIFO) rather than content that is
too large. Used by :mod:`resolver.catalog.walk`, :mod:`resolver.catalog.load`,
:mod:`resolver.catalog.ignore`, :mod:`resolver.channeltest` and ``pivoter catalog serve``.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "RefusedFile",
    "inspect",
    "read_bytes",
    "read_text",
    "real_path",
]

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest catalog file accepted (real per-package files are < 5 MiB; whole rendered catalogs in
one file reach tens of MiB)."""

_CHUNK = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class RefusedFile(OSError):
    """A file of a catalog directory that is not read; ``str()`` is one line saying why."""

    def __init__(self, message: str, *, io: bool = True) -> None:
        super().__init__(errno.EPERM, message)
        self.message = message
        self.io = io
        """True for a file-system problem (link, FIFO, device); False for a file too large."""

    def __str__(self) -> str:
        return self.message


_MAX_LINK_HOPS = 40
"""Links followed in one resolution before giving up, as the kernel does (ELOOP)."""


def real_path(path: str) -> str:
    """``os.path.realpath`` without recursion, refusing more than 40 links (the kernel's limit).

    Python 3.11's ``realpath`` recurses once per link, so a chain of 1,500 links planted in a
    catalog raised RecursionError (and cost quadratic time); this walks the components with an
    explicit stack. A missing component resolves lexically, as ``realpath`` does. Raises
    :class:`OSError` with ``errno.ELOOP`` past the link limit.
    """
    pending = list(reversed(os.path.abspath(path).split(os.sep)))
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
        if hops > _MAX_LINK_HOPS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
        target = os.readlink(candidate)
        if target.startswith(os.sep):
            resolved = os.sep
        pending.extend(reversed(target.split(os.sep)))
    return resolved


def _kind(mode: int) -> str:
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


def inspect(
    root: str,
    path: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    what: str = "catalog file",
    walked: bool = False,
) -> os.stat_result:
    """Check ``path`` (anywhere under ``root``) without opening it; return its ``stat``.

    Raises :class:`RefusedFile` when the path leaves ``root`` through a link, is not a regular
    file, or is over ``max_bytes`` (``what`` names the kind of file in that message); an
    :class:`OSError` of ``stat`` becomes a RefusedFile too. ``walked`` says that ``root`` is
    already a real path and that ``path`` was reached from it through directories that are not
    links (as :mod:`resolver.catalog.walk` lists them): then only a link as the last component
    needs resolving, which keeps listing a catalog of 10,000 files cheap.
    """
    try:
        real_root = root if walked else real_path(root)
        lst = os.lstat(path)
        link = stat.S_ISLNK(lst.st_mode)
        if link or not walked:
            target = real_path(path)
            if not _inside(real_root, target):
                if link:
                    raise RefusedFile(f"symbolic link leaves the catalog root (-> {target})")
                raise RefusedFile(f"{path} is outside the catalog root {real_root}")
        st = os.stat(path) if link else lst
    except RefusedFile:
        raise
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RefusedFile("symbolic link loop") from None
        raise RefusedFile(f"cannot stat: {err.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        if stat.S_ISLNK(lst.st_mode):
            raise RefusedFile("symbolic link to a directory: not followed (opm cannot read it)")
        raise RefusedFile("a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise RefusedFile(f"not a regular file ({_kind(st.st_mode)}): not read")
    _check_size(st.st_size, max_bytes, what)
    return st


def _check_size(size: int, max_bytes: int, what: str) -> None:
    if size > max_bytes:
        raise RefusedFile(
            f"file is {size:,} bytes, over the {max_bytes:,}-byte limit for one {what}", io=False
        )


def read_bytes(
    root: str,
    path: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    what: str = "catalog file",
    walked: bool = False,
    expect: tuple[int, int] | None = None,
) -> bytes:
    """Read ``path`` (under ``root``) whole, after :func:`inspect`, with at most ``max_bytes``.

    ``what`` names the kind of file in the size message (e.g. ``.indexignore``); ``walked`` is
    :func:`inspect`'s. ``expect`` is the (device, inode) the file had when it was listed: another
    file there now (a directory swapped for a link meanwhile) is refused. Raises
    :class:`RefusedFile`.
    """
    inspect(root, path, max_bytes=max_bytes, what=what, walked=walked)
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
            raise RefusedFile(f"not a regular file ({_kind(st.st_mode)}): not read")
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise RefusedFile("replaced by another file while the catalog was read: read again")
        _check_size(st.st_size, max_bytes, what)
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            except OSError as err:
                raise RefusedFile(f"cannot read: {err.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise RefusedFile(
                    f"grew past the {max_bytes:,}-byte limit for one {what} while being read",
                    io=False,
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(
    root: str,
    path: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    what: str = "catalog file",
    walked: bool = False,
    expect: tuple[int, int] | None = None,
) -> str:
    """:func:`read_bytes` decoded as UTF-8; invalid UTF-8 is a RefusedFile naming the offset."""
    data = read_bytes(root, path, max_bytes=max_bytes, what=what, walked=walked, expect=expect)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise RefusedFile(
            f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}, line {line})",
            io=False,
        ) from None
