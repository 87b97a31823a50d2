"""``pivoter catalog diff OLD NEW``: what users who installed from OLD get from NEW.

Prints one line per (package, channel, installed bundle) that changes: new head, new path, now
stranded, now deprecated, removed (see :mod:`resolver.channeltest.diff`), or ``-o json``. Exit 0
whatever changed (the diff is information), 1 when a catalog cannot be read, 3 when ``--package``
is in neither catalog.
"""

from __future__ import annotations

import argparse
from typing import Any

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Directory, Name
from pivoter.cli.output import emit, error

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``catalog diff``."""
    parser = add_command(subparsers, "diff", "show what users of an old catalog get from a new one")
    add_output_flag(parser)
    parser.add_argument(
        "old",
        metavar="OLD",
        type=Directory("catalog"),
        help="the catalog directory users installed from",
    )
    parser.add_argument(
        "new",
        metavar="NEW",
        type=Directory("catalog"),
        help="the catalog directory about to be published",
    )
    parser.add_argument(
        "--package", type=Name("text", "--package"), help="compare only this package"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not use the parsed-catalog cache"
    )
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog diff``."""
    from resolver.catalog.errors import CatalogLoadError
    from resolver.channeltest.diff import diff_catalogs
    from resolver.channeltest.loading import load_for_test

    try:
        old, _ = load_for_test(args.old, use_cache=not args.no_cache)
        new, _ = load_for_test(args.new, use_cache=not args.no_cache)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE)
    if args.package is not None and old.package(args.package) is new.package(args.package) is None:
        error(f"no package {args.package!r} in {args.old} or {args.new}")
        return int(ExitCode.INVALID)
    result = diff_catalogs(old, new, args.package)
    data = {
        "old": args.old,
        "new": args.new,
        "compared": result.compared,
        "counts": result.counts(),
        "changes": [c.to_dict() for c in result.changes],
    }
    emit(data, args.output, _human)
    return int(ExitCode.OK)


def _human(data: dict[str, Any]) -> str:
    lines = []
    for c in data["changes"]:
        what = ", ".join(c["changes"])
        line = f"{c['package']}/{c['channel']} {c['bundle']}: {what}"
        if "new-head" in c["changes"]:
            line += f"; head {c['old_head']} -> {c['new_head']}"
        if c["new_path"] != c["old_path"]:
            line += f"; path now: {' -> '.join(c['new_path']) or 'no upgrade'}"
        if c["detail"]:
            line += f" ({c['detail']})"
        lines.append(line)
    counts = ", ".join(f"{k}: {v}" for k, v in data["counts"].items()) or "no changes"
    lines.append(
        f"{data['compared']} installed bundle(s) compared; "
        f"{len(data['changes'])} affected ({counts})"
    )
    return "\n".join(lines)
