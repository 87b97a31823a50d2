"""``pivoter catalog test``: what a catalog's channels do to the people who install from them.

Reads a catalog directory (or ``olm.template.basic`` / ``olm.semver`` templates) and prints the
findings of :func:`resolver.channeltest.report.run_catalog_test`, once per package and defect
(validation first, errors apart from warnings, colour on a terminal; ``-v`` lists every single
finding under its group) and every channel's upgrade paths; or all of it as ``-o json|yaml``; or
for CI systems as ``-o github`` (workflow annotations), ``-o junit`` or ``-o sarif``
(:mod:`resolver.channeltest.ci`). ``--changed-since GIT_REF`` / ``--changed-files FILE`` narrow
the report to what a change touched or introduced (:mod:`pivoter.cli.catalog_changes`). Exit
codes: 0 no errors, 3 (INVALID) errors found or ``--package``/``--channel`` name nothing in the
catalog, 1 the target is neither a catalog nor templates (or cannot be read, or git cannot give
the ref), 2 a malformed ``--expect`` file or ``--changed-*`` with templates. With ``--live``,
walks one upgrade path on a cluster instead (:mod:`pivoter.cli.catalog_live`, which adds the
flags of ``--live``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pivoter import __version__
from pivoter.cli import catalog_live
from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Directory, ExistingPath, GitRefArgument, Name, TextFile
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from resolver.catalog.errors import Problem
    from resolver.catalog.model import Catalog
    from resolver.channeltest.expectations import Expectation
    from resolver.channeltest.findings import Finding
    from resolver.channeltest.report import Report

__all__ = ["CI_FORMATS", "human", "load_catalog", "register", "run"]

CI_FORMATS = ("github", "junit", "sarif")
"""``-o`` formats for CI systems, besides human, json and yaml."""

_RED, _YELLOW, _BOLD, _RESET = "\033[31m", "\033[33m", "\033[1m", "\033[0m"


def register(subparsers: Subparsers) -> None:
    """Add ``catalog test`` (with the flags of ``--live``)."""
    parser = add_command(
        subparsers,
        "test",
        "check what a catalog's channels do to the people who upgrade through them",
    )
    add_output_flag(parser, CI_FORMATS)
    parser.add_argument(
        "target",
        metavar="DIR",
        type=ExistingPath("catalog"),
        help="file-based catalog directory, or a template file or directory of templates",
    )
    parser.add_argument("--package", type=Name("text", "--package"), help="test only this package")
    parser.add_argument(
        "--channel", type=Name("text", "--channel"), help="test only channels of this name"
    )
    parser.add_argument(
        "--with",
        dest="others",
        action="append",
        type=Directory("--with catalog"),
        default=[],
        metavar="OTHER",
        help="another catalog directory that may satisfy dependencies (and resolve template "
        "images); repeatable",
    )
    parser.add_argument(
        "--expect",
        metavar="FILE",
        type=TextFile("--expect"),
        help="expectations file (YAML) to check",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not use the parsed-catalog cache"
    )
    parser.add_argument(
        "--legacy-semver-skips",
        action="store_true",
        help="expand olm.semver templates as older opm releases did (skips per minor version)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list every single finding under its group (and one annotation/result each with "
        "-o github|sarif)",
    )
    changed = parser.add_argument_group(
        "pull requests: report what a change touched or introduced (a catalog directory only)"
    )
    changed.add_argument(
        "--changed-since",
        metavar="GIT_REF",
        type=GitRefArgument("--changed-since"),
        help="report findings in packages whose files changed since GIT_REF (working tree "
        "included), and findings present now but not at GIT_REF in any package",
    )
    changed.add_argument(
        "--changed-files",
        metavar="FILE",
        type=TextFile("--changed-files"),
        help="a file listing changed paths, one a line (as 'git diff --name-only' prints them, "
        "relative to the working directory): report findings in the packages they touch",
    )
    set_handler(parser, run)
    catalog_live.add_flags(parser)


def load_catalog(path: str, use_cache: bool) -> tuple[Catalog, list[Any]]:
    """Load a catalog for testing; raise CatalogLoadError when nothing can be read."""
    from resolver.channeltest.loading import load_for_test

    catalog, problems = load_for_test(path, use_cache=use_cache)
    return catalog, list(problems)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog test`` (``--live`` runs :func:`pivoter.cli.catalog_live.run`)."""
    from pivoter.cli.catalog_changes import ChangeError
    from resolver.catalog.errors import CatalogLoadError
    from resolver.channeltest.expectations import ExpectationError, load_expectations

    expectations: list[Expectation] = []
    if args.expect:
        try:
            expectations = load_expectations(args.expect)
        except ExpectationError as err:
            error(str(err))
            return int(ExitCode.USAGE)
    try:
        others = [load_catalog(p, not args.no_cache)[0] for p in args.others]
        tested, root, templated = _reports(args, others)
        reports = [report for report, _ in tested]
        missing = _missing_scope(reports, args.package, args.channel)
        if missing:
            error(f"{args.target}: {missing}")
            return int(ExitCode.INVALID)
        for report in reports:
            _expect(report, expectations, root)
        if args.changed_since or args.changed_files:
            if templated:
                error("--changed-since and --changed-files test a catalog directory, not templates")
                return int(ExitCode.USAGE)
            reports = [_changed(args, others, expectations, *tested[0])]
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        # Files that cannot be read (or no catalog at all) are 1; content refused is 3, as in
        # catalog validate.
        io = any(problem.io for problem in err.problems)
        return int(ExitCode.FAILURE if io else ExitCode.INVALID)
    except ExpectationError as err:
        error(str(err))
        return int(ExitCode.USAGE)
    except ChangeError as err:
        error(str(err))
        return int(err.code)
    _print(args, reports, _relative(root) if root else "")
    return int(ExitCode.INVALID if any(r.errors for r in reports) else ExitCode.OK)


def _relative(path: str) -> str:
    """``path`` relative to the working directory, as annotations name files: the working
    directory is the OS's (symlinks resolved), so a catalog reached through a symlinked
    directory is named from its real path when only that one lies below it (catalogs/..., not
    ../link/catalogs/...)."""
    given = os.path.relpath(path)
    if not given.startswith(os.pardir):
        return given
    real = os.path.relpath(os.path.realpath(path))
    return given if real.startswith(os.pardir) else real


def _print(args: argparse.Namespace, reports: list[Report], base: str) -> None:
    """Write ``reports`` in the format ``-o`` asks for; ``base`` is the catalog directory as seen
    from the working directory (CI formats name files from there)."""
    from resolver.channeltest.ci.github import to_github
    from resolver.channeltest.ci.junit import to_junit
    from resolver.channeltest.ci.sarif import to_sarif

    if args.output == "github":
        sys.stdout.write(to_github(reports, base, args.verbose))
    elif args.output == "junit":
        # The document declares UTF-8, so it is written as UTF-8 whatever the locale's encoding.
        sys.stdout.flush()
        sys.stdout.buffer.write(to_junit(reports, base, args.verbose).encode("utf-8"))
    elif args.output == "sarif":
        sarif = to_sarif(reports, base, args.verbose, __version__)
        sys.stdout.write(json.dumps(sarif, indent=2) + "\n")
    else:
        data: Any = reports[0].to_dict() if len(reports) == 1 else [r.to_dict() for r in reports]
        colour = args.output == "human" and sys.stdout.isatty() and "NO_COLOR" not in os.environ
        emit(
            data,
            args.output,
            lambda _: "\n\n".join(human(r, args.package, colour, args.verbose) for r in reports),
        )


def _expect(report: Report, expectations: list[Expectation], root: str) -> None:
    """Add the failed ``expectations`` to ``report``, their file named from ``root`` as every
    finding's is."""
    from resolver.channeltest.expectations import check_expectations

    failed = check_expectations(report, expectations)
    if root:
        failed = [_rebased(f, root) for f in failed]
    report.findings = _with_extra(report.findings, failed)


def _rebased(f: Finding, root: str) -> Finding:
    from resolver.catalog.model import Origin

    if f.origin is None:
        return f
    path = os.path.relpath(os.path.abspath(f.origin.path), os.path.abspath(root))
    return dataclasses.replace(f, origin=Origin(path, f.origin.line))


def _changed(
    args: argparse.Namespace,
    others: Sequence[Catalog],
    expectations: list[Expectation],
    report: Report,
    catalog: Catalog | None,
) -> Report:
    """``report`` narrowed to what ``--changed-since``/``--changed-files`` say changed."""
    from pivoter.cli.catalog_changes import changed_report
    from resolver.catalog.errors import Problem
    from resolver.channeltest.report import run_catalog_test

    assert catalog is not None  # a catalog directory: _reports tested it

    def test_old(old: Catalog, problems: Sequence[object], root: str) -> Report:
        before = run_catalog_test(
            old,
            others=others,
            package=args.package,
            channel=args.channel,
            load_problems=[p for p in problems if isinstance(p, Problem)],
            root=root,
        )
        _expect(before, expectations, root)
        return before

    return changed_report(
        report,
        catalog,
        directory=args.target,
        ref=args.changed_since,
        files_list=args.changed_files,
        test_old=test_old,
        load=lambda path: load_catalog(path, False),
    )


def _with_extra(findings: list[Finding], extra: list[Finding]) -> list[Finding]:
    from resolver.channeltest.findings import ERROR

    errors = [f for f in findings if f.severity == ERROR]
    rest = [f for f in findings if f.severity != ERROR]
    return errors + extra + rest


def _reports(
    args: argparse.Namespace, others: Sequence[Catalog]
) -> tuple[list[tuple[Report, Catalog | None]], str, bool]:
    """Each report with the catalog it tested (None for templates), the directory their files
    are named from, and whether the target was templates."""
    from resolver.catalog.errors import CatalogLoadError
    from resolver.channeltest.locate import locate
    from resolver.channeltest.report import run_catalog_test
    from resolver.channeltest.templates import expand_file, find_templates

    target: str = args.target
    templates: list[str] = []
    problems: list[Problem] = []
    if os.path.isfile(target):
        templates = find_templates(target)
    elif os.path.isdir(target):
        catalog, problems = load_catalog(target, not args.no_cache)
        if catalog.packages or catalog.channels or catalog.bundles:
            report = run_catalog_test(
                catalog,
                others=others,
                package=args.package,
                channel=args.channel,
                load_problems=problems,
                root=target,
            )
            return [(report, catalog)], target, False
        templates = find_templates(target)
    if not templates:
        # What was refused (an alias bomb, a file over its budget) says more than "nothing here".
        raise CatalogLoadError(problems or [_no_catalog(target)])
    reports: list[tuple[Report, Catalog | None]] = []
    base = target if os.path.isdir(target) else os.path.dirname(target)
    for path in templates:
        rel = os.path.relpath(path, base) if base else path
        for expanded in expand_file(path, others, rel, legacy_skips=args.legacy_semver_skips):
            report = run_catalog_test(
                expanded.catalog,
                others=others,
                package=args.package,
                channel=args.channel,
                root=base or ".",
            )
            report.catalog = f"{rel} ({expanded.schema})"
            found = locate(expanded.findings, expanded.catalog, base or ".")
            report.findings = _with_extra(report.findings, found)
            reports.append((report, None))
    if not reports:  # template files whose documents are neither basic nor semver templates
        raise CatalogLoadError([_no_catalog(target)])
    return reports, base or ".", True


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
    from resolver.catalog.errors import Problem

    if not os.path.exists(target):
        return Problem(f"{target} does not exist", io=True)
    return Problem(f"{target}: neither a file-based catalog nor catalog templates", io=True)


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_RESET}" if colour else text


def human(report: Report, package: str | None, colour: bool, verbose: bool = False) -> str:
    """The report as text for a person: errors, warnings (once per package and defect; with
    ``verbose`` every single finding under its group), then channels and paths."""
    from resolver.channeltest.findings import ERROR, WARNING

    lines = [_paint(report.catalog, _BOLD, colour)]
    if report.changed is not None:
        lines.append(_changed_line(report.changed))
    groups = report.groups()
    for title, severity, code in (("errors", ERROR, _RED), ("warnings", WARNING, _YELLOW)):
        mine = [g for g in groups if g.severity == severity]
        singles = sum(len(g.findings) for g in mine)
        count = f"{len(mine)}" if singles == len(mine) else f"{len(mine)}; {singles} findings"
        lines.append(_paint(f"{title.upper()} ({count})", code, colour))
        for g in mine:
            where = f"{g.origin}: " if g.origin else ""
            lines.append(f"  {_paint(severity, code, colour)}: {where}{g.message} [{g.code}]")
            if verbose and len(g.findings) > 1:
                lines.extend(f"    - {_text(f)}" for f in g.findings)
    if any(len(g.findings) > 1 for g in groups) and not verbose:
        lines.append("(grouped by package and defect: -v lists every single finding)")
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
    lines.append(report.summary(groups))
    return "\n".join(lines)


def _changed_line(changed: dict[str, Any]) -> str:
    since = f"since {changed['since']}" if changed["since"] else "in the listed files"
    packages = ", ".join(changed["packages"]) or "none"
    text = f"changed {since}: {len(changed['files'])} file(s), packages {packages}"
    if changed["introduced_in"]:
        text += f"; new findings also in {', '.join(changed['introduced_in'])}"
    return text


def _text(f: Finding) -> str:
    where = f"{f.origin}: " if f.origin else ""
    return f"{where}{f.message} [{f.code}]"
