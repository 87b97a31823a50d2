"""``pivoter catalog ...``: the command group of the file-based catalog tools.

Each subcommand is its own module, with its flags and its handler:
:mod:`pivoter.cli.catalog_validate`, :mod:`pivoter.cli.catalog_serve`,
:mod:`pivoter.cli.catalog_render`, :mod:`pivoter.cli.catalog_test` (with ``--live``:
:mod:`pivoter.cli.catalog_live`), :mod:`pivoter.cli.catalog_diff` and
:mod:`pivoter.cli.catalog_graph`.
"""

from __future__ import annotations

from pivoter.cli import (
    catalog_diff,
    catalog_graph,
    catalog_render,
    catalog_serve,
    catalog_test,
    catalog_validate,
)
from pivoter.cli.commands._common import Subparsers, add_command

__all__ = ["SUBCOMMANDS", "register"]

SUBCOMMANDS = (
    catalog_validate,
    catalog_serve,
    catalog_render,
    catalog_test,
    catalog_diff,
    catalog_graph,
)
"""The subcommands, in the order ``pivoter catalog --help`` lists them."""


def register(subparsers: Subparsers) -> None:
    """Add the ``catalog`` command group."""
    parser = add_command(subparsers, "catalog", "work with file-based catalogs")
    group = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    for module in SUBCOMMANDS:
        module.register(group)
