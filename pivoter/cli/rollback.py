"""``pivoter rollback INPUT --to-revision N``: pin the input to an earlier ResolveSet revision.

The controller pivots to that revision and stays there, whatever the catalogs offer, until
``pivoter unpin``. A Resolution is pinned through ``spec.pinnedRevision``; a PlatformOperator or
a ClusterExtension (whose specs are upstream's) through the ``pivoter.io/pinned-revision``
annotation.
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

__all__ = ["pin", "register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``rollback``."""
    parser = add_command(subparsers, "rollback", "pin an input to an earlier ResolveSet revision")
    add_input_arguments(parser)
    parser.add_argument(
        "--to-revision", type=Count(), required=True, metavar="N", help="the revision to pin to"
    )
    set_handler(parser, run)


def pin(target: Target, number: int | None) -> None:
    """Pin ``target`` to revision ``number`` (None: unpin)."""
    from pivoter.apis.resources import RESOLUTIONS
    from pivoter.cli._inputs import ANNOTATION_PINNED_REVISION

    if target.resource == RESOLUTIONS:
        target.patch({"spec": {"pinnedRevision": number}})
    else:
        value = str(number) if number is not None else None
        target.patch({"metadata": {"annotations": {ANNOTATION_PINNED_REVISION: value}}})


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter rollback``."""
    from pivoter.cli._inputs import InputError, run_on_input

    def body(target: Target) -> int:
        revision = target.store.get(target.ref, args.to_revision)
        if revision is None:
            raise InputError(
                f"{target.ref} has no revision {args.to_revision}: see pivoter history {args.input}"
            )
        check = target.store.verify(revision)
        if not check.ok:
            raise InputError(f"revision {args.to_revision} cannot be used: {check.message}")
        pin(target, args.to_revision)
        result = {"input": str(target.ref), "pinnedRevision": args.to_revision}
        emit(
            result,
            args.output,
            lambda r: (
                f"{r['input']} is pinned to revision {r['pinnedRevision']}; "
                f"pivoter unpin {args.input} lets it follow its catalogs again"
            ),
        )
        return int(ExitCode.OK)

    return run_on_input(args, body)
