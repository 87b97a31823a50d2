"""``pivoter catalog graph DIR --package P [--channel C] -o OUT``: draw a package's upgrade graph.

``OUT`` is a file whose extension picks the format (``.svg``, ``.png``, ``.dot``/``.gv``,
``.mmd``/``.mermaid``) or one of those format names alone to print on stdout. SVG and PNG are laid
out by graphviz's ``dot`` (install it with ``hack/tools.sh graphviz``), with a time limit; a
package too large to lay out is refused with a message saying how to narrow it. The drawing
itself is :mod:`resolver.channeltest.render`. Its flags: :mod:`pivoter.cli.commands.catalog`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from pivoter.cli.commands.catalog import GRAPH_FORMATS as FORMATS
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import error
from resolver.catalog.errors import CatalogLoadError
from resolver.channeltest.graph import channel_graphs
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.render import GraphTooLarge, to_dot, to_mermaid


def output_format(out: str) -> str:
    """The format an ``-o`` value asks for ("" when unknown)."""
    if out in FORMATS:
        return FORMATS[out]
    return FORMATS.get(os.path.splitext(out)[1].lstrip(".").lower(), "")


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog graph``."""
    fmt = output_format(args.output)
    if not fmt:
        error(f"cannot tell the format of {args.output!r}: use .svg, .png, .dot or .mmd")
        return int(ExitCode.USAGE)
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
    to_stdout = args.output in FORMATS
    if fmt in ("dot", "mermaid"):
        if to_stdout:
            sys.stdout.write(text)
        else:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        return int(ExitCode.OK)
    return _layout(text, fmt, None if to_stdout else args.output, args.timeout)


def _layout(text: str, fmt: str, path: str | None, timeout: float) -> int:
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
