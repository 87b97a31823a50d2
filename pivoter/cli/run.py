"""``pivoter run``: start the daemon (controllers, webhooks, metrics, probes)."""

from __future__ import annotations

from pivoter.cli._common import Subparsers, add_command, unavailable


def register(subparsers: Subparsers) -> None:
    """Add the ``run`` command."""
    parser = add_command(subparsers, "run", "run the pivoter daemon against a cluster")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    parser.set_defaults(handler=unavailable("the daemon (pivoter run)"))
