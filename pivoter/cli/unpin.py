"""``pivoter unpin INPUT``: let an input follow its catalogs again after ``pivoter rollback``."""

from __future__ import annotations

import argparse

from pivoter.cli._inputs import Target, run_on_input
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit
from pivoter.cli.rollback import pin

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter unpin``."""

    def body(target: Target) -> int:
        pin(target, None)
        emit(
            {"input": str(target.ref), "pinnedRevision": None},
            args.output,
            lambda r: f"{r['input']} follows its catalogs again",
        )
        return int(ExitCode.OK)

    return run_on_input(args, body)
