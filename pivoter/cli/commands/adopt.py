"""The ``adopt`` command's flags: take over what OLM v0 installed (what it does:
:mod:`pivoter.cli.adopt`)."""

from __future__ import annotations

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.flags import Name, NamespacedName, Seconds, TextFile

DEFAULT_TIMEOUT = 600.0


def register(subparsers: Subparsers) -> None:
    """Add ``adopt``."""
    adopt = add_command(
        subparsers,
        "adopt",
        "take over operators OLM v0 installed (a Subscription, or every Subscription of a "
        "namespace) without reinstalling them; --undo hands them back",
    )
    which = adopt.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--subscription",
        type=NamespacedName(),
        metavar="NAMESPACE/NAME",
        help="the OLM v0 Subscription to adopt",
    )
    which.add_argument(
        "--olm-namespace",
        type=Name("dns-label", "namespace"),
        metavar="NAMESPACE",
        help="adopt every Subscription of this namespace (one Resolution each)",
    )
    adopt.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (or the reasons it is refused) and change nothing",
    )
    adopt.add_argument(
        "--undo",
        action="store_true",
        help="hand adopted operators back to OLM v0 (re-creates their Subscriptions)",
    )
    adopt.add_argument(
        "--timeout",
        type=Seconds(),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for each adoption (default {DEFAULT_TIMEOUT:g})",
    )
    adopt.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )
    add_output_flag(adopt)
    set_handler(adopt, "pivoter.cli.adopt:run")
