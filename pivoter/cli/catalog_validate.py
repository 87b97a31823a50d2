"""``pivoter catalog validate DIR``: check a directory with opm's rules, every defect with file
and line.

The rules are :mod:`resolver.catalog.validate`; the directory is read by
:func:`resolver.catalog.load.load_directory` (with its parsed-file cache unless ``--no-cache``).
Exit 0 valid, 3 (INVALID) findings or a catalog that does not load, 1 a directory that cannot be
read.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pivoter.cli.commands._common import (
    Subparsers,
    add_cache_flag,
    add_command,
    add_output_flag,
    set_handler,
)
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Directory
from pivoter.cli.output import emit

if TYPE_CHECKING:
    from resolver.catalog.errors import CatalogLoadError
    from resolver.catalog.validate import ValidationFinding

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``catalog validate``."""
    parser = add_command(subparsers, "validate", "validate a file-based catalog directory")
    add_output_flag(parser)
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    add_cache_flag(parser)
    set_handler(parser, run)


def _load_problem_findings(err: CatalogLoadError) -> list[dict[str, Any]]:
    return [
        {
            "severity": "error",
            "category": "io" if p.io else "load",
            "message": p.message,
            "file": p.origin.path if p.origin else "",
            "line": p.origin.line if p.origin else 0,
            "object": None,
        }
        for p in err.problems
    ]


def _human_findings(data: dict[str, Any]) -> str:
    lines = []
    for f in data["findings"]:
        where = f["file"] + (f":{f['line']}" if f["line"] else "")
        prefix = f"{where}: " if where else ""
        lines.append(f"{prefix}{f['severity']}: {f['message']} [{f['category']}]")
    lines.append(data["summary"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog validate``."""
    from resolver.catalog.errors import CatalogLoadError
    from resolver.catalog.load import load_directory
    from resolver.catalog.validate import validate

    directory: str = args.directory
    try:
        catalog = load_directory(directory, use_cache=not args.no_cache)
    except CatalogLoadError as err:
        findings = _load_problem_findings(err)
        code = ExitCode.FAILURE if err.io else ExitCode.INVALID
        summary = f"{directory}: cannot be loaded ({len(findings)} problem(s))"
        emit(
            {"passed": False, "findings": findings, "summary": summary},
            args.output,
            _human_findings,
        )
        return int(code)
    found: list[ValidationFinding] = validate(catalog)
    summary = (
        f"{directory}: {'invalid' if found else 'valid'}: {len(catalog.packages)} packages, "
        f"{len(catalog.channels)} channels, {len(catalog.bundles)} bundles"
        + (f", {len(found)} finding(s)" if found else "")
    )
    data = {"passed": not found, "findings": [f.to_dict() for f in found], "summary": summary}
    emit(data, args.output, _human_findings)
    return int(ExitCode.INVALID if found else ExitCode.OK)
