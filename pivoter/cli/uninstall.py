"""``pivoter uninstall``: remove pivoter; refused while inputs exist unless told what to do.

``--keep-workloads`` removes pivoter and leaves everything it installed running, with no finalizer
of pivoter's left behind; ``--backup DIR`` first writes the inputs to ``DIR/pivoter-inputs.yaml``
to apply again after a new install (:mod:`pivoter.install.removal`, docs/install.md).
"""

from __future__ import annotations

import argparse

from pivoter.cli.commands._common import (
    Subparsers,
    add_command,
    add_kubeconfig_flag,
    add_output_flag,
    set_handler,
)
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Seconds, StoreDirectory
from pivoter.cli.install import add_image_flags, manifests_for, progress
from pivoter.cli.output import emit, error

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``uninstall``."""
    parser = add_command(
        subparsers,
        "uninstall",
        "remove pivoter from the cluster (refused while inputs exist, unless --keep-workloads)",
    )
    parser.add_argument(
        "--keep-workloads",
        action="store_true",
        help="remove pivoter and its inputs, leaving every operator it installed running",
    )
    parser.add_argument(
        "--backup",
        type=StoreDirectory("backup directory"),
        metavar="DIR",
        help="first write the inputs to DIR/pivoter-inputs.yaml (to apply after a new install)",
    )
    parser.add_argument(
        "--timeout",
        type=Seconds(),
        default=300.0,
        help="how long to wait for each step (default: 300 s)",
    )
    add_image_flags(parser)
    add_kubeconfig_flag(parser)
    add_output_flag(parser)
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter uninstall``."""
    from pivoter.install.installer import InstallError
    from pivoter.install.manifests import ManifestsError
    from pivoter.install.removal import remove
    from pivoter.kube import Kube, KubeConfigError, KubeError, load_client

    try:
        manifests = manifests_for(args)
        kube = Kube(load_client(args.kubeconfig))
    except (ManifestsError, KubeConfigError) as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        let_go = remove(
            kube,
            manifests,
            keep_workloads=args.keep_workloads,
            backup=args.backup,
            progress=progress,
            timeout=args.timeout,
        )
    except InstallError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)
    result = {
        "uninstalled": True,
        "letGo": [str(found) for found in let_go],
        "backup": str(args.backup / "pivoter-inputs.yaml") if args.backup else None,
    }

    def human(data: dict[str, object]) -> str:
        if not let_go:
            return "pivoter is uninstalled"
        return (
            f"pivoter is uninstalled; {len(let_go)} of its objects were let go and what they "
            "installed still runs"
        )

    emit(result, args.output, human)
    return int(ExitCode.OK)
