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
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
from collections.abc import Iterable, Sequence

from resolver.catalog.guard import read_text
from resolver.catalog.model import Catalog, Origin
from resolver.channeltest.findings import Finding


class _Files:
    """The lines of each catalog file, read once, and where each object of it starts."""

    def __init__(self, root: str, catalog: Catalog) -> None:
        self.root = root
        self._lines: dict[str, list[str] | None] = {}
        self._starts: dict[str, list[int]] = {}
        for origin in _origins(catalog):
            self._starts.setdefault(origin.path, []).append(origin.line)
        for starts in self._starts.values():
            starts.sort()

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            try:
                self._lines[path] = read_text(self.root, os.path.join(self.root, path)).splitlines()
            except OSError:  # RefusedFile included: the load reported it already
                self._lines[path] = None
        return self._lines[path]

    def object_end(self, origin: Origin) -> int:
        """The line where the next object of the file starts (exclusive end of this one)."""
        starts = self._starts.get(origin.path, [])
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
    """``name: X`` as YAML (block or flow) or JSON writes it, X not part of a longer name."""
    return re.compile(
        r"""(?<![\w.-])["']?name["']?\s*:\s*["']?""" + re.escape(name) + r"""(?![\w.+-])"""
    )


def _find(lines: Sequence[str], start: int, end: int, match: re.Pattern[str] | str) -> int:
    """The 1-based number of the first line in [start, end) matching, or 0."""
    for number in range(max(start, 1), min(end, len(lines) + 1)):
        text = lines[number - 1]
        if (match in text) if isinstance(match, str) else match.search(text):
            return number
    return 0


def locate(findings: Sequence[Finding], catalog: Catalog, root: str) -> list[Finding]:
    """``findings`` with each origin moved to its entry's (or image's) line where it can be
    found in the files under ``root``; the others unchanged."""
    files = _Files(root, catalog)
    channel_starts = {
        (c.origin.path, c.origin.line) for c in catalog.channels if c.origin and c.origin.line
    }
    out = []
    for f in findings:
        line = _line(f, catalog, files, channel_starts)
        if line and f.origin is not None and line != f.origin.line:
            out.append(dataclasses.replace(f, origin=Origin(f.origin.path, line)))
        else:
            out.append(f)
    return out


def _line(f: Finding, catalog: Catalog, files: _Files, channel_starts: set[tuple[str, int]]) -> int:
    origin = f.origin
    if origin is None:
        return 0
    if origin.line and (origin.path, origin.line) in channel_starts and f.channel and f.bundle:
        lines = files.lines(origin.path)
        if lines is None:
            return 0
        return _find(lines, origin.line, files.object_end(origin), _entry_pattern(f.bundle))
    if origin.line:
        lines = files.lines(origin.path)
        # A parser error at the end of a file is reported on the line after the last one.
        return len(lines) if lines and origin.line > len(lines) else 0
    # A template: objects have no line; look for what the finding names.
    lines = files.lines(origin.path)
    if lines is None:
        return 0
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
        found = _find(lines, 1, len(lines) + 1, needle)
        if found:
            return found
    return 0
