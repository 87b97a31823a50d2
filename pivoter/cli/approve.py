"""``pivoter approve INPUT [--revision N]``: approve the pending pivot of a Manual input.

Writes the ``pivoter.io/approved-revision`` annotation with the revision (by default the one of
the published plan); the controller pivots only to the revision the approval names, so a newer
selection published meanwhile needs its own approval.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pivoter.cli.commands._common import Subparsers, add_command, add_input_arguments, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Count
from pivoter.cli.output import emit

if TYPE_CHECKING:
    from pivoter.cli._inputs import Target

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``approve``."""
    parser = add_command(
        subparsers, "approve", "approve a pending pivot of an input with Manual approval"
    )
    add_input_arguments(parser)
    parser.add_argument(
        "--revision",
        type=Count(),
        metavar="N",
        help="the revision to approve (default: the plan's)",
    )
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter approve``."""
    from pivoter.cli._inputs import InputError, run_on_input
    from pivoter.inputs import ANNOTATION_APPROVED_REVISION

    def body(target: Target) -> int:
        number = args.revision
        if number is None:
            number = (target.status.get("pendingPlan") or {}).get("revision")
            if number is None:
                raise InputError(f"{target.ref} has no plan waiting for approval")
        if target.store.get(target.ref, int(number)) is None:
            raise InputError(f"{target.ref} has no revision {number}")
        target.patch({"metadata": {"annotations": {ANNOTATION_APPROVED_REVISION: str(number)}}})
        emit(
            {"input": str(target.ref), "approvedRevision": int(number)},
            args.output,
            lambda r: f"approved revision {r['approvedRevision']} of {r['input']}",
        )
        return int(ExitCode.OK)

    return run_on_input(args, body)
