"""``pivoter resolve``: pick bundles from catalogs and print the ResolveSet."""

from __future__ import annotations

from pivoter.cli._common import Subparsers, add_command, unavailable
from pivoter.cli.output import add_output_flag


def register(subparsers: Subparsers) -> None:
    """Add the ``resolve`` command."""
    parser = add_command(subparsers, "resolve", "resolve packages from catalogs into a ResolveSet")
    parser.add_argument("--catalog", action="append", default=[], metavar="SOURCE")
    parser.add_argument("--package", action="append", default=[], metavar="NAME[@RANGE]")
    add_output_flag(parser)
    parser.set_defaults(handler=unavailable("resolution (pivoter resolve)"))
