"""``pivoter catalog graph DIR --package P [--channel C] -o OUT``: draw a package's upgrade graph.

``OUT`` is a file whose extension picks the format (``.svg``, ``.png``, ``.dot``/``.gv``,
``.mmd``/``.mermaid``) or one of those format names alone to print on stdout. SVG and PNG are laid
out by graphviz's ``dot`` (install it with ``hack/tools.sh graphviz``), with a time limit; a
package too large to lay out is refused with a message saying how to narrow it. The drawing
itself is :mod:`resolver.channeltest.render`.
"""

from __future__ import annotations

import argparse
import sys

from pivoter.cli.commands._common import Subparsers, add_command, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Count, Directory, Name, OutputPath, OutputTarget, Seconds
from pivoter.cli.output import error

__all__ = ["DEFAULT_MAX_NODES", "FORMATS", "register", "run"]

FORMATS = {
    "svg": "svg",
    "png": "png",
    "dot": "dot",
    "gv": "dot",
    "mmd": "mermaid",
    "mermaid": "mermaid",
}
"""``-o``: a file extension, or a format name alone (stdout), and the format it asks for."""

DEFAULT_MAX_NODES = 600
"""``resolver.channeltest.render.DEFAULT_MAX_NODES`` (``tests/unit/test_cli_imports.py`` checks
that the two agree)."""


def register(subparsers: Subparsers) -> None:
    """Add ``catalog graph``."""
    parser = add_command(subparsers, "graph", "draw a package's upgrade graph")
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    parser.add_argument(
        "--package", required=True, type=Name("text", "--package"), help="the package to draw"
    )
    parser.add_argument(
        "--channel",
        type=Name("text", "--channel"),
        help="draw only this channel (default: every channel)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=OutputPath("-o", stdout=tuple(FORMATS), extensions=tuple(FORMATS)),
        metavar="OUT",
        help="out.svg, out.png, out.dot or out.mmd; or svg|png|dot|mermaid for stdout",
    )
    parser.add_argument(
        "--max-nodes",
        type=Count(maximum=1_000_000),
        default=DEFAULT_MAX_NODES,
        help="refuse to draw more bundles than this (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=Seconds(),
        default=60.0,
        help="seconds graphviz may take to lay the graph out (default %(default)g)",
    )
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog graph``."""
    from resolver.catalog.errors import CatalogLoadError
    from resolver.channeltest.graph import channel_graphs
    from resolver.channeltest.loading import load_for_test
    from resolver.channeltest.render import GraphTooLarge, to_dot, to_mermaid

    output: OutputTarget = args.output
    fmt = FORMATS[output.format]
    try:
        catalog, _ = load_for_test(args.directory)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE)
    graphs = channel_graphs(catalog, args.package, args.channel)
    if not graphs:
        what = f"channel {args.channel!r} of " if args.channel else ""
        error(f"no {what}package {args.package!r} in {args.directory}")
        return int(ExitCode.INVALID)
    pkg = catalog.package(args.package)
    default = pkg.default_channel if pkg else ""
    try:
        text = (
            to_mermaid(graphs, default, args.max_nodes)
            if fmt == "mermaid"
            else to_dot(graphs, default, args.max_nodes)
        )
    except GraphTooLarge as err:
        error(f"package {args.package!r}: {err}")
        return int(ExitCode.INVALID)
    if fmt in ("dot", "mermaid"):
        if output.path is None:
            sys.stdout.write(text)
        else:
            with open(output.path, "w", encoding="utf-8") as f:
                f.write(text)
        return int(ExitCode.OK)
    return _layout(text, fmt, output.path, args.timeout)


def _layout(text: str, fmt: str, path: str | None, timeout: float) -> int:
    import shutil
    import subprocess

    dot = shutil.which("dot")
    if dot is None:
        error(
            "graphviz's 'dot' is not installed: run hack/tools.sh graphviz "
            "(or apt-get install graphviz)"
        )
        return int(ExitCode.FAILURE)
    cmd = [dot, f"-T{fmt}"] + ([f"-o{path}"] if path else [])
    try:
        done = subprocess.run(
            cmd, input=text.encode(), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        error(
            f"graphviz took more than {timeout:g} s: draw one channel with --channel C, or give "
            "it more time with --timeout"
        )
        return int(ExitCode.FAILURE)
    if done.returncode != 0:
        error(f"graphviz failed: {done.stderr.decode(errors='replace').strip()}")
        return int(ExitCode.FAILURE)
    if path is None:
        sys.stdout.buffer.write(done.stdout)
    return int(ExitCode.OK)
