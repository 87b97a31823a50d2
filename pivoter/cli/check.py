"""``pivoter check [--pre]``: can pivoter be installed here, and does the installed one work.

``--pre`` before an install: the API server's version, every right the install needs, the
admission API, other webhooks in the way (:func:`pivoter.install.health.before_install`).
Without it: CRDs, the daemon rolled out at this command's version (a skew is a warning), its
certificate, a leader, the webhook answering, every catalog served
(:func:`pivoter.install.health.after_install`). Exit 1 when a check failed.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pivoter import __version__
from pivoter.cli.commands._common import (
    Subparsers,
    add_command,
    add_kubeconfig_flag,
    add_output_flag,
    set_handler,
)
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.install import add_image_flags, manifests_for
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from pivoter.install.health import CheckFinding

__all__ = ["register", "run"]

_MARK = {"ok": "✔", "warning": "!", "failed": "✗"}


def register(subparsers: Subparsers) -> None:
    """Add ``check``."""
    parser = add_command(
        subparsers,
        "check",
        "check that pivoter can be installed (--pre) or that the installed pivoter works",
    )
    parser.add_argument(
        "--pre", action="store_true", help="before an install: can it be installed here"
    )
    add_image_flags(parser)
    add_kubeconfig_flag(parser)
    add_output_flag(parser)
    set_handler(parser, run)


def _human(findings: list[dict[str, str]]) -> str:
    return "\n".join(f"{_MARK[f['status']]} {f['check']}: {f['message']}" for f in findings)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter check``."""
    from dataclasses import asdict

    from pivoter.install.health import after_install, before_install
    from pivoter.install.manifests import ManifestsError
    from pivoter.kube import Kube, KubeConfigError, KubeError, load_client

    try:
        manifests = manifests_for(args)
        kube = Kube(load_client(args.kubeconfig))
    except (ManifestsError, KubeConfigError) as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    check = before_install if args.pre else after_install
    try:
        findings: list[CheckFinding] = check(kube, manifests, __version__)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)
    emit([asdict(f) for f in findings], args.output, _human)
    failed = [f for f in findings if f.status == "failed"]
    return int(ExitCode.FAILURE if failed else ExitCode.OK)
