""".indexignore files: read through the catalog file guard, compiled within limits, matched in
linear time.

An ``.indexignore`` holds gitignore-style patterns (``pathspec``'s ``GitIgnoreSpec``, as
``github.com/joelanford/ignore`` reads them for opm) that exclude files below its directory. Like
every file of a catalog directory it is untrusted, so besides the checks of
:mod:`resolver.catalog.guard` (regular file inside the root, read with a bound) it has limits of
its own: :data:`MAX_IGNORE_BYTES` per file, :data:`MAX_PATTERNS` per file,
:data:`MAX_TOTAL_PATTERNS` for the whole catalog and :data:`MAX_PATTERN_CHARS` per pattern. Patterns
are matched with RE2 (``google-re2``, a declared dependency: linear time, where Python's
backtracking ``re`` takes exponential time on patterns full of wildcards). A pattern
that is not valid gitignore syntax is reported with its line. Called by
:mod:`resolver.catalog.walk`.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field

import pathspec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from resolver.catalog.guard import RefusedFile, inspect, read_text

__all__ = [
    "INDEX_IGNORE",
    "MAX_IGNORE_BYTES",
    "MAX_PATTERNS",
    "MAX_PATTERN_CHARS",
    "MAX_TOTAL_PATTERNS",
    "IgnoreBudget",
    "IgnoreError",
    "IgnoreRules",
    "read_ignore",
]

INDEX_IGNORE = ".indexignore"
MAX_IGNORE_BYTES = 64 * 1024
"""Largest ``.indexignore`` read (real ones are a few lines; RE2's memory budget compiles 64 KiB of
plain patterns, while patterns full of wildcards can be refused as too complex before that)."""
MAX_PATTERNS = 1000
"""Most patterns in one ``.indexignore``."""
MAX_TOTAL_PATTERNS = 5000
"""Most patterns in all the ``.indexignore`` files of one catalog together."""
MAX_PATTERN_CHARS = 512
"""Longest pattern (a path component is at most 255 bytes)."""
_BACKEND = "re2"
"""pathspec's matcher: RE2, never the backtracking ``re``."""


class IgnoreError(ValueError):
    """An ``.indexignore`` that is not used; ``str()`` is one line (with the line number)."""

    def __init__(self, message: str, line: int = 0, *, io: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.io = io


class _OverBudget(IgnoreError):
    """The catalog's ignore files together hold too many patterns."""


@dataclass
class IgnoreBudget:
    """What is left of :data:`MAX_TOTAL_PATTERNS` while one catalog's ignore files are read."""

    patterns: int = MAX_TOTAL_PATTERNS


@dataclass(frozen=True)
class IgnoreRules:
    """The compiled patterns of one ``.indexignore``."""

    spec: pathspec.GitIgnoreSpec = field(repr=False)
    count: int = 0
    """How many patterns it holds (what it costs of :data:`MAX_TOTAL_PATTERNS`)."""

    def verdict(self, relpath: str) -> bool | None:
        """True: ignored; False: re-included by a ``!`` pattern; None: no pattern matches."""
        result = self.spec.check_file(relpath)
        return None if result.include is None else bool(result.include)


_COMPILED: OrderedDict[tuple[str, int, int, int, int], IgnoreRules | IgnoreError] = OrderedDict()
"""Compiled ignore files (or why they cannot be) by path and (size, mtime, inode, device):
``catalog serve`` lists its directory every poll, and compiling is the costly part of that."""
_COMPILED_MAX = 256
_COMPILED_LOCK = threading.Lock()


def read_ignore(
    root: str, path: str, budget: IgnoreBudget | None = None, *, walked: bool = False
) -> IgnoreRules:
    """Read and compile the ``.indexignore`` at ``path`` (under ``root``; ``walked`` as in
    :func:`resolver.catalog.guard.inspect`).

    Raises :class:`IgnoreError` when the file is refused by the guard, is over a limit, or holds
    a pattern that is not valid gitignore syntax.
    """
    budget = budget or IgnoreBudget()
    try:
        st = inspect(root, path, max_bytes=MAX_IGNORE_BYTES, what=".indexignore", walked=walked)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        with _COMPILED_LOCK:
            hit = _COMPILED.get(key)
        if isinstance(hit, IgnoreError):
            raise IgnoreError(hit.message, hit.line, io=hit.io)
        if hit is not None:
            _spend(budget, hit.count)
            return hit
        text = read_text(root, path, max_bytes=MAX_IGNORE_BYTES, what=".indexignore", walked=walked)
    except RefusedFile as err:
        raise IgnoreError(f"cannot read .indexignore: {err}", io=err.io) from None
    result: IgnoreRules | IgnoreError
    try:
        result = compile_patterns(text, budget)
    except _OverBudget:
        raise  # the catalog's total, not this file's fault: not remembered
    except IgnoreError as err:
        result = err
    with _COMPILED_LOCK:
        _COMPILED[key] = result
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    if isinstance(result, IgnoreError):
        raise IgnoreError(result.message, result.line, io=result.io)
    return result


def _spend(budget: IgnoreBudget, count: int) -> None:
    budget.patterns -= count
    if budget.patterns < 0:
        raise _OverBudget(
            f".indexignore: the catalog's ignore files hold more than {MAX_TOTAL_PATTERNS:,} "
            "patterns together"
        )


def compile_patterns(text: str, budget: IgnoreBudget) -> IgnoreRules:
    """Compile the patterns of one ``.indexignore``'s text within the limits."""
    numbered: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) > MAX_PATTERN_CHARS:
            raise IgnoreError(
                f".indexignore: pattern is {len(line):,} characters, over the "
                f"{MAX_PATTERN_CHARS}-character limit",
                number,
            )
        numbered.append((number, line))
        if len(numbered) > MAX_PATTERNS:
            raise IgnoreError(
                f".indexignore: more than {MAX_PATTERNS:,} patterns (line {number}); "
                "split it or simplify it",
                number,
            )
    _spend(budget, len(numbered))
    with warnings.catch_warnings():
        # Python's re warns about "[[" ("possible nested set"): not our user's concern here.
        warnings.simplefilter("ignore")
        patterns: list[GitIgnoreSpecPattern] = []
        for number, line in numbered:
            try:
                patterns.append(GitIgnoreSpecPattern(line))
            except Exception as err:  # pathspec raises several kinds for bad syntax
                raise IgnoreError(
                    f".indexignore: invalid pattern {line!r}: {err}", number
                ) from None
        try:
            spec = pathspec.GitIgnoreSpec(patterns, backend=_BACKEND)
        except Exception as err:  # RE2 refuses sets over its memory budget
            raise IgnoreError(
                f".indexignore: its {len(numbered):,} patterns are too complex to compile "
                f"({type(err).__name__}: {err}); simplify them"
            ) from None
    return IgnoreRules(spec, len(numbered))
