"""``pivoter approve INPUT [--revision N]``: approve the pending pivot of a Manual input.

Writes the ``pivoter.io/approved-revision`` annotation with the revision (by default the one of
the published plan); the controller pivots only to the revision the approval names, so a newer
selection published meanwhile needs its own approval.
"""

from __future__ import annotations

import argparse

from pivoter.cli._inputs import InputError, Target, run_on_input
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit
from pivoter.resolutions import ANNOTATION_APPROVED_REVISION

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter approve``."""

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
