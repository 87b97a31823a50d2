"""``pivoter catalog test``: what a catalog's channels do to the people who install from them.

Reads a catalog directory (or ``olm.template.basic`` / ``olm.semver`` templates) and prints the
findings of :func:`resolver.channeltest.report.run_catalog_test` (validation first, errors apart
from warnings, colour on a terminal) and every channel's upgrade paths, or all of it as
``-o json``. Exit codes: 0 no errors, 3 (INVALID) errors found or ``--package``/``--channel`` name
nothing in the catalog, 1 the target is neither a catalog nor templates (or cannot be read),
2 a malformed ``--expect`` file. With ``--live``, walks one upgrade path on a cluster
instead (:mod:`pivoter.cli.catalog_live`). Its flags: :mod:`pivoter.cli.commands.catalog`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit, error
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.model import Catalog
from resolver.channeltest.expectations import (
    Expectation,
    ExpectationError,
    check_expectations,
    load_expectations,
)
from resolver.channeltest.findings import ERROR, Finding
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.report import Report, run_catalog_test
from resolver.channeltest.templates import expand_file, find_templates

_RED, _YELLOW, _BOLD, _RESET = "\033[31m", "\033[33m", "\033[1m", "\033[0m"


def load_catalog(path: str, use_cache: bool) -> tuple[Catalog, list[Any]]:
    """Load a catalog for testing; raise CatalogLoadError when nothing can be read."""
    catalog, problems = load_for_test(path, use_cache=use_cache)
    return catalog, list(problems)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog test`` (``--live`` names :func:`pivoter.cli.catalog_live.run`)."""
    expectations: list[Expectation] = []
    if args.expect:
        try:
            expectations = load_expectations(args.expect)
        except ExpectationError as err:
            error(str(err))
            return int(ExitCode.USAGE)
    try:
        others = [load_catalog(p, not args.no_cache)[0] for p in args.others]
        reports = _reports(args, others)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE)
    except ExpectationError as err:
        error(str(err))
        return int(ExitCode.USAGE)
    missing = _missing_scope(reports, args.package, args.channel)
    if missing:
        error(f"{args.target}: {missing}")
        return int(ExitCode.INVALID)
    if expectations:
        for report in reports:
            failed = check_expectations(report, expectations)
            report.findings = _with_extra(report.findings, failed)
    data: Any = reports[0].to_dict() if len(reports) == 1 else [r.to_dict() for r in reports]
    colour = args.output == "human" and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    emit(data, args.output, lambda _: "\n\n".join(human(r, args.package, colour) for r in reports))
    return int(ExitCode.INVALID if any(r.errors for r in reports) else ExitCode.OK)


def _with_extra(findings: list[Finding], extra: list[Finding]) -> list[Finding]:
    errors = [f for f in findings if f.severity == ERROR]
    rest = [f for f in findings if f.severity != ERROR]
    return errors + extra + rest


def _reports(args: argparse.Namespace, others: Sequence[Catalog]) -> list[Report]:
    target: str = args.target
    templates: list[str] = []
    if os.path.isfile(target):
        templates = find_templates(target)
    elif os.path.isdir(target):
        catalog, problems = load_catalog(target, not args.no_cache)
        if catalog.packages or catalog.channels or catalog.bundles:
            return [
                run_catalog_test(
                    catalog,
                    others=others,
                    package=args.package,
                    channel=args.channel,
                    load_problems=problems,
                )
            ]
        templates = find_templates(target)
    if not templates:
        raise CatalogLoadError([_no_catalog(target)])
    reports = []
    base = target if os.path.isdir(target) else os.path.dirname(target)
    for path in templates:
        rel = os.path.relpath(path, base) if base else path
        for expanded in expand_file(path, others, rel, legacy_skips=args.legacy_semver_skips):
            report = run_catalog_test(
                expanded.catalog, others=others, package=args.package, channel=args.channel
            )
            report.catalog = f"{rel} ({expanded.schema})"
            report.findings = _with_extra(report.findings, expanded.findings)
            reports.append(report)
    if not reports:  # template files whose documents are neither basic nor semver templates
        raise CatalogLoadError([_no_catalog(target)])
    return reports


def _missing_scope(reports: Sequence[Report], package: str | None, channel: str | None) -> str:
    """Why ``--package``/``--channel`` select nothing in any of ``reports`` ("" if they do).

    Testing nothing must not pass: a misspelt name would otherwise report 0 errors.
    """
    packages = sorted({name for r in reports for name in r.defaults})
    if package is not None and package not in packages:
        known = ", ".join(packages[:10]) + (", ..." if len(packages) > 10 else "")
        return f"no package {package!r} in the catalog (it has: {known or 'none'})"
    if channel is not None and not any(r.graphs for r in reports):
        where = f"package {package!r}" if package is not None else "any package"
        return f"no channel {channel!r} in {where}"
    return ""


def _no_catalog(target: str) -> Problem:
    if not os.path.exists(target):
        return Problem(f"{target} does not exist", io=True)
    return Problem(f"{target}: neither a file-based catalog nor catalog templates", io=True)


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_RESET}" if colour else text


def human(report: Report, package: str | None, colour: bool) -> str:
    """The report as text for a person: errors, warnings, then channels and paths."""
    lines = [_paint(report.catalog, _BOLD, colour)]
    for title, items, code in (
        ("errors", report.errors, _RED),
        ("warnings", report.warnings, _YELLOW),
    ):
        lines.append(_paint(f"{title.upper()} ({len(items)})", code, colour))
        lines.extend(f"  {_paint(f.severity, code, colour)}: {_text(f)}" for f in items)
    lines.append(f"CHANNELS ({len(report.graphs)})")
    for ch in report.channels_data():
        entries = ch["entries"]
        longest = max(entries, key=lambda e: e["length"], default=None)
        tags = [t for t, on in (("default", ch["default"]), ("deprecated", ch["deprecated"])) if on]
        lines.append(
            f"  {ch['package']}/{ch['channel']}{' (' + ', '.join(tags) + ')' if tags else ''}: "
            f"head {ch['head'] or '-'}, {len(entries)} entries"
            + (
                f", longest path {longest['length']} step(s) from {longest['bundle']}"
                if longest and longest["length"]
                else ""
            )
        )
        if package:
            for e in entries:
                if e["bundle"] == ch["head"]:
                    continue
                mark = "" if e["reaches_head"] else "  (does not reach the head)"
                route = " -> ".join(e["path"]) or "no upgrade"
                lines.append(f"    {e['bundle']}: {e['length']} step(s): {route}{mark}")
    lines.append(report.summary())
    return "\n".join(lines)


def _text(f: Finding) -> str:
    where = f"{f.origin}: " if f.origin else ""
    return f"{where}{f.message} [{f.code}]"
