"""``pivoter version``: its flags; the command is :mod:`pivoter.cli.version`."""

from __future__ import annotations

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler


def register(subparsers: Subparsers) -> None:
    """Add the ``version`` command."""
    parser = add_command(subparsers, "version", "print the version of pivoter and its libraries")
    add_output_flag(parser)
    set_handler(parser, "pivoter.cli.version:run")
