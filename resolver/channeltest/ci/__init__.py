"""``catalog test`` reports in the formats CI systems read: workflow annotations for GitHub
Actions (:mod:`.github`), JUnit XML (:mod:`.junit`) and SARIF 2.1.0 (:mod:`.sarif`).

Each format writes one entry per finding group (:mod:`resolver.channeltest.grouping`), or per
single finding with ``verbose`` (``-v``). Findings carry their file relative to the catalog
directory; CI systems want it relative to the repository, which is where a CI job runs, so every
format takes ``base``, the catalog directory as seen from the working directory, and joins it in
front (:func:`artifact_path`). Called by ``pivoter catalog test -o github|junit|sarif``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from resolver.catalog.model import Origin
from resolver.channeltest.grouping import FindingGroup, singletons
from resolver.channeltest.report import Report

__all__ = ["artifact_path", "entries", "xml_safe"]


def entries(report: Report, verbose: bool = False) -> list[FindingGroup]:
    """What one report contributes to an output: its groups, or each finding with ``verbose``."""
    return singletons(report.findings) if verbose else report.groups()


def artifact_path(origin: Origin | None, base: str) -> str:
    """The finding's file as seen from the working directory ("" when it has none)."""
    if origin is None or not origin.path:
        return ""
    path = origin.path.replace("\\", "/")
    if posixpath.isabs(path) or not base or base == ".":
        return posixpath.normpath(path)
    return posixpath.normpath(posixpath.join(base.replace("\\", "/"), path))


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (a catalog may contain any)."""
    return _NOT_XML.sub("\ufffd", text)


def locations(group: FindingGroup, base: str) -> Sequence[tuple[str, int]]:
    """Every (file, line) of a group's findings, first one first, without repeats."""
    seen: dict[tuple[str, int], None] = {}
    for f in group.findings:
        path = artifact_path(f.origin, base)
        if path:
            seen.setdefault((path, f.origin.line if f.origin else 0), None)
    return list(seen)
