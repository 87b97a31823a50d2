"""``pivoter install``: pivoter's CRDs and daemon at this command's own version, or an upgrade.

``--dry-run`` contacts no cluster: it prints the manifests (``-o yaml``, the default, or
``json``), as ``hack/release.sh`` writes ``install.yaml``. Otherwise the user's rights and a
server-side dry run are checked first, and a missing right refuses the whole install with every
right listed, nothing applied (:mod:`pivoter.install.rights`); then the objects are applied and the
rollout waited for, with progress on stderr (:mod:`pivoter.install.installer`). Installing over
an older pivoter upgrades it; over a newer one it is refused (docs/install.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from pivoter import __version__
from pivoter.cli.commands._common import Subparsers, add_command, add_kubeconfig_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import ImageReferenceArgument, Seconds, TextFile
from pivoter.cli.output import error

if TYPE_CHECKING:
    from pivoter.install.manifests import Manifests

__all__ = ["progress", "register", "release", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``install``."""
    parser = add_command(
        subparsers,
        "install",
        f"install pivoter {__version__} (its CRDs and daemon) on a cluster, or upgrade an older "
        "one to it",
    )
    add_image_flags(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the manifests instead of applying them (no cluster is contacted)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="the format of --dry-run's manifests (default: yaml)",
    )
    parser.add_argument(
        "--timeout",
        type=Seconds(),
        default=300.0,
        help="how long to wait for the daemon to be ready (default: 300 s)",
    )
    add_kubeconfig_flag(parser)
    set_handler(parser, run)


def add_image_flags(parser: argparse.ArgumentParser) -> None:
    """``--image`` and ``--olmv1-apis``: what selects the manifests (install and check)."""
    parser.add_argument(
        "--image",
        type=ImageReferenceArgument(),
        metavar="REF",
        help=f"the daemon's image (default: the release image of {__version__}, "
        "ghcr.io/pivoter/pivoter:VERSION; a mirror or a digest reference for disconnected "
        "clusters)",
    )
    parser.add_argument(
        "--olmv1-apis",
        action="store_true",
        help="also install OLM v1's CRDs (ClusterExtension, ClusterCatalog) for pivoter to serve; "
        "never next to a running OLM v1 (docs/olm-v1.md)",
    )
    parser.add_argument(
        "--registries-conf",
        type=TextFile("--registries-conf"),
        metavar="FILE",
        help="a containers registries.conf (mirrors, insecure and blocked registries) for every "
        "pull the daemon makes: kept in a ConfigMap the daemon reads (docs/registries.md)",
    )


def progress(line: str) -> None:
    """One progress line on stderr."""
    sys.stderr.write(f"  {line}\n")
    sys.stderr.flush()


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version (``0.2.1.dev3+g1234`` -> (0, 2, 1)); () if none."""
    match = re.match(r"v?(\d+(?:\.\d+)*)", version)
    return tuple(int(p) for p in match[1].split(".")) if match else ()


def manifests_for(args: argparse.Namespace) -> Manifests:
    """The manifests the flags select."""
    from pathlib import Path

    from pivoter.install.manifests import ManifestsError, render

    registries = None
    if args.registries_conf:
        try:
            registries = Path(args.registries_conf).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ManifestsError(f"cannot read {args.registries_conf}: {exc}") from exc
    return render(__version__, args.image, olmv1_apis=args.olmv1_apis, registries_conf=registries)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter install``."""
    import yaml

    from pivoter.install.manifests import ManifestsError

    try:
        manifests = manifests_for(args)
    except ManifestsError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    if args.dry_run:
        if args.output == "json":
            import json

            listing = {"apiVersion": "v1", "kind": "List", "items": list(manifests.all())}
            sys.stdout.write(json.dumps(listing, indent=2) + "\n")
        else:
            header = f"# pivoter {__version__}: `pivoter install --dry-run` ({manifests.image})\n"
            sys.stdout.write(header + yaml.safe_dump_all(manifests.all(), sort_keys=False))
        return int(ExitCode.OK)
    return _install(args, manifests)


def _install(args: argparse.Namespace, manifests: Manifests) -> int:
    from pivoter.install.installer import (
        InstallError,
        apply_manifests,
        dry_run,
        installed_version,
    )
    from pivoter.install.rights import missing_rights
    from pivoter.kube import Kube, KubeConfigError, KubeError, load_client

    try:
        kube = Kube(load_client(args.kubeconfig))
    except KubeConfigError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        sys.stderr.write(f"pivoter {__version__} ({manifests.image}): checking your rights\n")
        missing = missing_rights(kube, manifests.all())
        if missing:
            listed = "".join(f"\n  {m}" for m in missing)
            error(
                f"you may not install pivoter; nothing was applied. {len(missing)} right(s) "
                f"missing:{listed}"
            )
            return int(ExitCode.FAILURE)
        installed = installed_version(kube, manifests)
        if installed is not None and release(installed) > release(__version__):
            error(
                f"pivoter {installed} is installed, newer than this command ({__version__}): a "
                "downgrade is refused (an older daemon may not read what a newer one wrote); use "
                f"the command of {installed} or newer (docs/install.md, 'Downgrades')"
            )
            return int(ExitCode.FAILURE)
        what = f"upgrading pivoter {installed} to" if installed else "installing pivoter"
        sys.stderr.write(f"{what} {__version__}: a server-side dry run first\n")
        problems = dry_run(kube, manifests)
        if problems:
            listed = "".join(f"\n  {p}" for p in problems)
            error(f"the server-side dry run failed; nothing was applied:{listed}")
            return int(ExitCode.FAILURE)
        sys.stderr.write("applying\n")
        result = apply_manifests(kube, manifests, progress=progress, timeout=args.timeout)
    except InstallError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)
    for warning in result.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    print(
        f"pivoter {__version__} is installed: {len(result.created)} created, "
        f"{len(result.configured)} configured, {len(result.unchanged)} unchanged. "
        "`pivoter check` tells whether it works."
    )
    return int(ExitCode.OK)
