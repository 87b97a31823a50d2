"""The one gate every file of a catalog directory passes through before it is read.

A catalog directory is untrusted: anyone who can write to it can plant a FIFO, a link to an
endless device or to a file outside the catalog, a chain of links, or a file far larger than any
catalog file. The checks are :mod:`resolver.safefiles`' (the reader of every untrusted tree:
catalogs, bundles, the content store); this module gives them a catalog's defaults (256 MiB per
file, messages that say "catalog"), the same way for catalog files, ``.indexignore`` files,
``catalog test`` templates and expectations, and the catalog server's JSONL rendering:

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

import os

from resolver import safefiles
from resolver.safefiles import RefusedFile, real_path

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

_TREE = "catalog"


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
    file, or is over ``max_bytes`` (``what`` names the kind of file in that message). ``walked``
    says that ``root`` is already a real path and that ``path`` was reached from it through
    directories that are not links (as :mod:`resolver.catalog.walk` lists them): then only a
    link as the last component needs resolving. See :func:`resolver.safefiles.inspect`.
    """
    return safefiles.inspect(root, path, max_bytes=max_bytes, what=what, tree=_TREE, walked=walked)


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

    ``expect`` is the (device, inode) the file had when it was listed: another file there now (a
    directory swapped for a link meanwhile) is refused. Raises :class:`RefusedFile`.
    """
    return safefiles.read_bytes(
        root, path, max_bytes=max_bytes, what=what, tree=_TREE, walked=walked, expect=expect
    )


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
    return safefiles.read_text(
        root, path, max_bytes=max_bytes, what=what, tree=_TREE, walked=walked, expect=expect
    )
