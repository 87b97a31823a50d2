"""Errors raised while reading a catalog.

:func:`resolver.catalog.load.load_directory` and :func:`resolver.catalog.load.load_objects` raise
:class:`CatalogLoadError` with *every* problem found (not just the first), each naming the file and
line of the offending object where it is known. Callers (the CLI, the daemon's catalog sources, the
servers) report them and keep any previously loaded catalog: a failed load never yields a
half-loaded :class:`~resolver.catalog.model.Catalog`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from resolver.catalog.model import Origin


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a catalog could not be loaded, with where it was found (None when unknown).

    ``io`` is true when the file system failed us (unreadable file, bad symlink) rather than the
    catalog's content being invalid.
    """

    message: str
    origin: Origin | None = None
    io: bool = False

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}" if self.origin else self.message


class CatalogLoadError(Exception):
    """A catalog could not be read; ``problems`` lists every reason found, in file order."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(self._summary())

    @property
    def io(self) -> bool:
        """True when any problem is an I/O failure rather than invalid content."""
        return any(p.io for p in self.problems)

    def _summary(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        lines = [f"{len(self.problems)} problems:"] + [f"  {p}" for p in self.problems]
        return "\n".join(lines)
