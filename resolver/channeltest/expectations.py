"""Expectations: what a catalog maintainer states must hold, checked by ``catalog test --expect``.

The file is YAML (schema in ``docs/catalog-testing.md``)::

    package: my-operator            # default package of every statement (optional)
    expect:
      - next_upgrade: {channel: stable, from: 1.2.0, to: 1.4.0}
      - reachable: {channel: stable, to: 2.0.0, from: "1.x"}
      - not_deprecated: {channel: fast}
      - head: {channel: stable, is: 2.0.0}
      - max_path_length: {channel: stable, steps: 3}

A bundle is named by its bundle name or its version; ``from`` of ``reachable`` and
``max_path_length`` may also be a blang range (``1.x``, ``>=1.0.0 <2.0.0``; default: every entry).
:func:`load_expectations` raises :class:`ExpectationError` naming the statement for a malformed
file; :func:`check_expectations` turns each statement that does not hold into an
``expectation-failed`` finding. Called by the CLI.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resolver import safedata
from resolver.catalog.guard import read_text, real_path
from resolver.catalog.model import Origin
from resolver.channeltest.findings import Finding, finding
from resolver.channeltest.graph import ChannelGraph
from resolver.channeltest.report import Report
from resolver.versions import (
    RangeSyntaxError,
    VersionRange,
    VersionSyntaxError,
    parse_range,
    parse_version,
)

KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required keys, optional keys); "package" is optional everywhere
    "next_upgrade": (("channel", "from", "to"), ()),
    "reachable": (("channel", "to"), ("from",)),
    "not_deprecated": (("channel",), ()),
    "head": (("channel", "is"), ()),
    "max_path_length": (("channel", "steps"), ("from",)),
}
"""Every statement kind with its required and optional keys."""


_STEPS = re.compile(r"[0-9]{1,9}\Z")
"""A path length: ASCII digits, few enough that ``int()`` is quick and never refuses them."""


MAX_EXPECTATIONS_BYTES = 16 * 1024 * 1024
"""Largest expectations file read."""


class ExpectationError(ValueError):
    """An expectations file that cannot be read; the message names the statement and key."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """One statement: its kind, package, channel and arguments, and where it is in the file
    (``index`` in the ``expect`` list; ``source`` and ``line`` when read from a file)."""

    kind: str
    package: str
    channel: str
    args: Mapping[str, str]
    index: int
    source: str = ""
    line: int = 0

    def describe(self) -> str:
        """The statement as the maintainer wrote it, for messages."""
        shown = ", ".join(f"{k}: {v}" for k, v in self.args.items())
        return f"expect[{self.index}] {self.kind} ({self.package}/{self.channel}; {shown})"


def load_expectations(path: str) -> list[Expectation]:
    """Read and check the shape of an expectations file."""
    try:
        # Through the catalog file guard: no FIFO, device or huge file.
        text = read_text(
            os.path.dirname(real_path(path)),  # a file named by the user: links ok
            path,
            max_bytes=MAX_EXPECTATIONS_BYTES,
            what="expectations file",
        )
        doc = safedata.load_yaml(text)
    except OSError as err:  # RefusedFile included
        raise ExpectationError(f"{path}: cannot read: {err.strerror}") from None
    except safedata.SafeDataError as err:
        raise ExpectationError(f"{path}: not valid YAML: {err}") from None
    statements = parse_expectations(doc, path)
    lines = statement_lines(text, len(statements))
    return [dataclasses.replace(e, source=path, line=lines[e.index]) for e in statements]


_EXPECT_KEY = re.compile(r"""^["']?expect["']?\s*:""")


def statement_lines(text: str, count: int) -> list[int]:
    """The 1-based line of each of the ``count`` items of the top-level ``expect`` list, as far
    as the text shows it (block style: each ``-`` item's line; flow style: the ``expect:`` line;
    0 where it cannot tell)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _EXPECT_KEY.match(line)), None)
    if start is None:
        return [0] * count
    rest = lines[start][lines[start].index(":") + 1 :].strip()
    if rest.startswith("["):
        return [start + 1] * count
    out: list[int] = []
    indent: int | None = None
    for number, line in enumerate(lines[start + 1 :], start + 2):
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        here = len(line) - len(stripped)
        if indent is None:
            if not stripped.startswith("-"):
                break
            indent = here
        if here < indent or (here == indent and not stripped.startswith("-")):
            break
        if here == indent:
            out.append(number)
    return (out + [0] * count)[:count]


def parse_expectations(doc: Any, source: str = "expectations") -> list[Expectation]:
    """Check the shape of a decoded expectations document and return its statements."""
    if not isinstance(doc, dict) or not isinstance(doc.get("expect"), list):
        raise ExpectationError(f"{source}: must be a mapping with an 'expect' list")
    unknown = set(doc) - {"package", "expect"}
    if unknown:
        raise ExpectationError(f"{source}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    default_package = str(doc.get("package") or "")
    out = []
    for i, item in enumerate(doc["expect"]):
        where = f"{source}: expect[{i}]"
        if not isinstance(item, dict) or len(item) != 1:
            raise ExpectationError(
                f"{where}: must be a mapping with exactly one key, one of {', '.join(KINDS)}"
            )
        ((kind, body),) = item.items()
        if kind not in KINDS:
            raise ExpectationError(
                f"{where}: unknown statement {kind!r} (known: {', '.join(KINDS)})"
            )
        if not isinstance(body, dict):
            raise ExpectationError(f"{where}: {kind} must be a mapping")
        required, optional = KINDS[kind]
        missing = [k for k in required if k not in body]
        extra = set(body) - set(required) - set(optional) - {"package"}
        if missing:
            raise ExpectationError(f"{where}: {kind} needs key(s): {', '.join(missing)}")
        if extra:
            raise ExpectationError(
                f"{where}: {kind} has unknown key(s): {', '.join(sorted(extra))}"
            )
        package = str(body.get("package") or default_package)
        if not package:
            raise ExpectationError(f"{where}: no package (give 'package' here or at the top)")
        args = {k: str(v) for k, v in body.items() if k not in ("package", "channel")}
        if kind == "max_path_length" and not _STEPS.match(args["steps"]):
            raise ExpectationError(f"{where}: steps must be a whole number (at most 9 digits)")
        out.append(Expectation(kind, package, str(body["channel"]), args, i))
    return out


def check_expectations(report: Report, expectations: list[Expectation]) -> list[Finding]:
    """One ``expectation-failed`` finding per statement that does not hold in ``report``."""
    out = []
    for exp in expectations:
        graph = report.graph(exp.package, exp.channel)
        problem = (
            f"package {exp.package!r} has no channel {exp.channel!r}"
            if graph is None
            else _check(exp, graph)
        )
        if problem:
            out.append(
                finding(
                    "expectation-failed",
                    f"{exp.describe()}: {problem}",
                    package=exp.package,
                    channel=exp.channel,
                    origin=Origin(exp.source, exp.line) if exp.source else None,
                )
            )
    return out


def _check(exp: Expectation, g: ChannelGraph) -> str:
    a = exp.args
    if exp.kind == "head":
        want = _one(g, a["is"])
        return "" if want is not None and want == g.head else f"the head is {g.head}"
    if exp.kind == "not_deprecated":
        if g.package_deprecated or g.channel_deprecated:
            return "the channel is deprecated: " + (g.channel_deprecated or g.package_deprecated)
        bad = sorted(n for n in g.entries if n in g.deprecated)
        return f"deprecated entries: {', '.join(bad)}" if bad else ""
    if exp.kind == "next_upgrade":
        start, want = _one(g, a["from"]), _one(g, a["to"])
        if start is None:
            return f"{a['from']} is not an entry of the channel"
        got = g.next_upgrade(start)
        return "" if got is not None and got == want else f"the next upgrade is {got or 'none'}"
    starts = _many(g, a.get("from", "*"))
    if not starts:
        return f"no entry matches from: {a.get('from')}"
    if exp.kind == "reachable":
        target = _one(g, a["to"])
        if target is None:
            return f"{a['to']} is not an entry of the channel"
        stuck = [s for s in starts if s != target and target not in g.reachable_from(s)]
        return f"not reachable from {', '.join(stuck)}" if stuck else ""
    limit = int(a["steps"])
    long = [f"{s} ({g.path(s).length})" for s in starts if g.path(s).length > limit]
    return f"longer paths: {', '.join(long)}" if long else ""


def _one(g: ChannelGraph, ref: str) -> str | None:
    if ref in g.entries:
        return ref
    try:
        version = parse_version(ref)
    except VersionSyntaxError:
        return None
    return next((n for n in g.by_version() if g.versions.get(n) == version), None)


def _many(g: ChannelGraph, ref: str) -> list[str]:
    one = _one(g, ref)
    if one is not None:
        return [one]
    try:
        rng: VersionRange = parse_range(ref, "blang") if ref != "*" else parse_range(">=0.0.0-0")
    except RangeSyntaxError as err:
        raise ExpectationError(
            f"from: {ref!r} is neither a bundle, a version nor a range: {err}"
        ) from None
    return [n for n in g.by_version() if (v := g.versions.get(n)) is not None and rng.contains(v)]
