"""Point each finding at the line it is about, not only at the object that holds it.

The loader records where each catalog object starts; a channel finding (a stranded entry, a
downgrade edge) is about one entry of that channel, and CI annotations show on the changed lines
of a pull request only when they name the entry's own line. :func:`locate` reads the catalog
files again (through the same file guard as the loader) and moves a channel finding to the line of
its entry (``name: <bundle>`` within the channel object, YAML or JSON), and a finding of a
template, whose objects have no line, to the line naming its image, bundle or package. A finding
whose text cannot be found keeps the line it had (a line past the end of its file, where a YAML
parser reports an unclosed bracket, becomes the last line). Called by
:func:`resolver.channeltest.report.run_catalog_test` when it is given the catalog's directory.

Files are read as ``catalog validate`` reads them: one at a time, each dropped before the next is
read, and without a string per line (a 32 MiB file of short lines cost 650 MB as a list of lines
and kept every file with a finding in memory at once). A line's offset is found by counting
newlines at C speed (:class:`_Text`), so memory stays about the size of the largest file.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
from array import array
from collections.abc import Iterable, Sequence

from resolver.catalog.guard import read_text
from resolver.catalog.model import Catalog, Origin
from resolver.channeltest.findings import Finding

_STEP = 1 << 16
"""Characters per step of the newline count index of :class:`_Text`."""
_BREAK = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""Line breaks ``str.splitlines`` knows besides ``\n`` (``\r\n`` is one break)."""
_ANY_BREAK = re.compile(r"[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_NEVER = re.compile(r"(?!)")


class _Text:
    """One file's text with its lines numbered as ``str.splitlines`` numbers them, without
    splitting it: other line breaks become ``\n``, and the newlines before every 64 KiB step
    are counted once, so a line's start is a bisection plus a count within one step."""

    def __init__(self, text: str) -> None:
        if _BREAK.search(text):
            text = _BREAK.sub("\n", text)
        self.text = text
        newlines = text.count("\n")
        self.lines = newlines + (1 if text and not text.endswith("\n") else 0)
        """How many lines ``splitlines`` would give."""
        before = array("q", [0])
        for start in range(0, len(text), _STEP):
            before.append(before[-1] + text.count("\n", start, start + _STEP))
        self._before = before

    def start(self, line: int) -> int:
        """The offset where 1-based ``line`` starts (the text's length past its last line)."""
        if line <= 1:
            return 0
        need = line - 1  # newlines before it
        if need > self._before[-1]:
            return len(self.text)
        step = bisect.bisect_left(self._before, need) - 1  # before[step] < need <= before[step+1]
        low = step * _STEP
        high = min(low + _STEP, len(self.text))
        need -= self._before[step]
        # The smallest end with `need` newlines in text[low:end]: the line starts there.
        lo, hi = low, high
        while lo < hi:
            mid = (lo + hi) // 2
            if self.text.count("\n", low, mid) >= need:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def line_at(self, offset: int) -> int:
        """The 1-based line holding ``offset``."""
        step = offset // _STEP
        return self._before[step] + self.text.count("\n", step * _STEP, offset) + 1

    def find(self, start: int, end: int, match: re.Pattern[str] | str) -> int:
        """The 1-based number of the first line in [start, end) matching, or 0 (a match never
        spans lines, as when each line was searched on its own)."""
        first, last = max(start, 1), min(end, self.lines + 1)
        if first >= last:
            return 0
        low, high = self.start(first), self.start(last)
        if isinstance(match, str):
            if _ANY_BREAK.search(match):
                return 0
            at = self.text.find(match, low, high)
        else:
            found = match.search(self.text, low, high)
            at = -1 if found is None else found.start()
        return 0 if at < 0 else self.line_at(at)


def _read(root: str, path: str) -> _Text | None:
    try:
        return _Text(read_text(root, os.path.join(root, path)))
    except OSError:  # RefusedFile included: the load reported it already
        return None


def _object_starts(catalog: Catalog) -> dict[str, list[int]]:
    """The lines where each object of each file starts, sorted."""
    starts: dict[str, list[int]] = {}
    for origin in _origins(catalog):
        starts.setdefault(origin.path, []).append(origin.line)
    for lines in starts.values():
        lines.sort()
    return starts


def _object_end(starts: Sequence[int], origin: Origin) -> int:
    """The line where the next object of the file starts (exclusive end of this one)."""
    i = bisect.bisect_right(starts, origin.line)
    return starts[i] if i < len(starts) else 1 << 62


def _origins(catalog: Catalog) -> Iterable[Origin]:
    for group in (catalog.packages, catalog.channels, catalog.bundles, catalog.deprecations):
        for obj in group:
            if obj.origin is not None and obj.origin.line:
                yield obj.origin
    for meta in catalog.others:
        if meta.origin is not None and meta.origin.line:
            yield meta.origin


def _entry_pattern(name: str) -> re.Pattern[str]:
    """``name: X`` as YAML (block or flow) or JSON writes it on one line, X not part of a longer
    name (a name with a line break in it is on no line)."""
    if _ANY_BREAK.search(name):
        return _NEVER
    return re.compile(
        r"""(?<![\w.-])["']?name["']?[^\S\n]*:[^\S\n]*["']?"""
        + re.escape(name)
        + r"""(?![\w.+-])"""
    )


def locate(findings: Sequence[Finding], catalog: Catalog, root: str) -> list[Finding]:
    """``findings`` with each origin moved to its entry's (or image's) line where it can be
    found in the files under ``root``; the others unchanged. Each file is read once, and
    released before the next is read."""
    starts = _object_starts(catalog)
    channel_starts = {
        (c.origin.path, c.origin.line) for c in catalog.channels if c.origin and c.origin.line
    }
    by_file: dict[str, list[int]] = {}
    for index, f in enumerate(findings):
        if f.origin is not None:
            by_file.setdefault(f.origin.path, []).append(index)
    out = list(findings)
    for path, indexes in by_file.items():
        text = _read(root, path)
        if text is None:
            continue
        for index in indexes:
            f = findings[index]
            assert f.origin is not None
            line = _line(f, catalog, text, starts.get(path, []), channel_starts)
            if line and line != f.origin.line:
                out[index] = dataclasses.replace(f, origin=Origin(f.origin.path, line))
        del text  # one file in memory at a time
    return out


def _line(
    f: Finding,
    catalog: Catalog,
    text: _Text,
    starts: Sequence[int],
    channel_starts: set[tuple[str, int]],
) -> int:
    origin = f.origin
    if origin is None:
        return 0
    if origin.line and (origin.path, origin.line) in channel_starts and f.channel and f.bundle:
        return text.find(origin.line, _object_end(starts, origin), _entry_pattern(f.bundle))
    if origin.line:
        # A parser error at the end of a file is reported on the line after the last one.
        return text.lines if text.lines and origin.line > text.lines else 0
    # A template: objects have no line; look for what the finding names.
    needles: list[re.Pattern[str] | str] = []
    if f.code.startswith("template-") and f.detail:
        needles.append(f.detail)
    if f.bundle:
        needles.append(_entry_pattern(f.bundle))
        bundle = catalog.bundle(f.package, f.bundle)
        if bundle is not None and bundle.image:
            needles.append(bundle.image)
    if f.package:  # the package object (or its first mention)
        needles.append(_entry_pattern(f.package))
    for needle in needles:
        found = text.find(1, text.lines + 1, needle)
        if found:
            return found
    return 0
