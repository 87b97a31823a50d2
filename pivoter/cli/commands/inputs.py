"""The input commands' flags: ``history``, ``rollback``, ``unpin``, ``plan`` and ``approve``.

Each names an input (``INPUT`` is ``NAME``, ``resolution/NAME``, ``platformoperator/NAME`` or
``clusterextension/NAME``) on a cluster; what they do is :mod:`pivoter.cli.history`,
:mod:`pivoter.cli.rollback`, :mod:`pivoter.cli.unpin`, :mod:`pivoter.cli.plan` and
:mod:`pivoter.cli.approve`.
"""

from __future__ import annotations

import argparse

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.flags import Count, InputSpec, Name, TextFile

DEFAULT_NAMESPACE = "pivoter-system"
"""Where revisions are kept unless ``--namespace`` says otherwise."""


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``INPUT``, ``--kubeconfig``, ``--namespace`` and ``-o``."""
    parser.add_argument(
        "input",
        metavar="INPUT",
        type=InputSpec(),
        help="a Resolution name, or resolution/NAME, platformoperator/NAME or "
        "clusterextension/NAME",
    )
    parser.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        type=Name("dns-label", "namespace"),
        help=f"pivoter's namespace, where revisions are kept (default {DEFAULT_NAMESPACE})",
    )
    add_output_flag(parser)


def register(subparsers: Subparsers) -> None:
    """Add ``history``, ``rollback``, ``unpin``, ``plan`` and ``approve``, in that order."""
    history = add_command(subparsers, "history", "list the ResolveSet revisions of an input")
    add_input_arguments(history)
    set_handler(history, "pivoter.cli.history:run")

    rollback = add_command(subparsers, "rollback", "pin an input to an earlier ResolveSet revision")
    add_input_arguments(rollback)
    rollback.add_argument(
        "--to-revision", type=Count(), required=True, metavar="N", help="the revision to pin to"
    )
    set_handler(rollback, "pivoter.cli.rollback:run")

    unpin = add_command(
        subparsers, "unpin", "let an input follow its catalogs again after a rollback"
    )
    add_input_arguments(unpin)
    set_handler(unpin, "pivoter.cli.unpin:run")

    plan = add_command(
        subparsers, "plan", "show what the next pivot of an input would do, without doing it"
    )
    add_input_arguments(plan)
    set_handler(plan, "pivoter.cli.plan:run")

    approve = add_command(
        subparsers, "approve", "approve a pending pivot of an input with Manual approval"
    )
    add_input_arguments(approve)
    approve.add_argument(
        "--revision",
        type=Count(),
        metavar="N",
        help="the revision to approve (default: the plan's)",
    )
    set_handler(approve, "pivoter.cli.approve:run")
