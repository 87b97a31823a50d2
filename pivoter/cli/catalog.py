"""``pivoter catalog ...``: validate, serve, render, test, diff and draw file-based catalogs."""

from __future__ import annotations

from pivoter.cli._common import Subparsers, add_command, unavailable
from pivoter.cli.output import add_output_flag

_SUBCOMMANDS = {
    "validate": "validate a file-based catalog directory",
    "serve": "serve a catalog over gRPC (api.Registry) and HTTP (catalogd API)",
    "render": "print any catalog source as FBC JSON",
    "test": "check what a catalog's channels do to the people who upgrade through them",
    "diff": "show what users of an old catalog get from a new one",
    "graph": "draw a package's upgrade graph",
}


def register(subparsers: Subparsers) -> None:
    """Add the ``catalog`` command group."""
    parser = add_command(subparsers, "catalog", "work with file-based catalogs")
    group = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    for name, help_text in _SUBCOMMANDS.items():
        sub = add_command(group, name, help_text)
        add_output_flag(sub)
        sub.set_defaults(handler=unavailable(f"pivoter catalog {name}"))
