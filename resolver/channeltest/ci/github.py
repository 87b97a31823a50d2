"""``catalog test -o github``: GitHub Actions workflow commands, one annotation per finding group.

Each line is ``::error file=F,line=L,title=T::MESSAGE`` (``::warning`` for warnings), the syntax
of GitHub's "workflow commands" documentation and of ``@actions/core``: in the message ``%``,
``\\r`` and ``\\n`` are written ``%25``, ``%0D`` and ``%0A``; in a property value ``:`` and ``,``
are also written ``%3A`` and ``%2C``. ``file`` is relative to the working directory (the
repository root in a workflow), so the annotation shows on that line of a pull request's diff.
Each report's summary ends the output as a plain log line (``pivoter catalog test: ...``, never
read as a command). Called by the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence

from resolver.channeltest.ci import artifact_path, entries
from resolver.channeltest.findings import ERROR
from resolver.channeltest.grouping import FindingGroup
from resolver.channeltest.report import Report


def escape_data(text: str) -> str:
    """A command's message, escaped as ``@actions/core`` escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value, escaped as ``@actions/core`` escapes it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def title(group: FindingGroup) -> str:
    """``code (package/channel)``: what an annotation's heading says."""
    where = "/".join(p for p in (group.package, group.channel) if p)
    return f"{group.code} ({where})" if where else group.code


def annotation(group: FindingGroup, base: str) -> str:
    """One workflow command for ``group``."""
    command = "error" if group.severity == ERROR else "warning"
    props = []
    path = artifact_path(group.origin, base)
    if path:
        props.append(f"file={escape_property(path)}")
        line = group.origin.line if group.origin else 0
        if line:
            props.append(f"line={line}")
    props.append(f"title={escape_property(title(group))}")
    return f"::{command} {','.join(props)}::{escape_data(group.message)}"


def to_github(reports: Sequence[Report], base: str, verbose: bool = False) -> str:
    """Every report's findings as workflow commands, then each report's summary line."""
    lines = [annotation(g, base) for r in reports for g in entries(r, verbose)]
    lines.extend(f"pivoter catalog test: {escape_data(r.summary())}" for r in reports)
    return "\n".join(lines) + "\n"
