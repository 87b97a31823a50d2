"""``pivoter unpin INPUT``: let an input follow its catalogs again after ``pivoter rollback``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pivoter.cli.commands._common import Subparsers, add_command, add_input_arguments, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit
from pivoter.cli.rollback import pin

if TYPE_CHECKING:
    from pivoter.cli._inputs import Target

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``unpin``."""
    parser = add_command(
        subparsers, "unpin", "let an input follow its catalogs again after a rollback"
    )
    add_input_arguments(parser)
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter unpin``."""
    from pivoter.cli._inputs import run_on_input

    def body(target: Target) -> int:
        pin(target, None)
        emit(
            {"input": str(target.ref), "pinnedRevision": None},
            args.output,
            lambda r: f"{r['input']} follows its catalogs again",
        )
        return int(ExitCode.OK)

    return run_on_input(args, body)
