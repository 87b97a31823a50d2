"""``pivoter run``: the daemon's flags; the command is :mod:`pivoter.cli.run`.

The defaults below are the daemon's own (:mod:`pivoter.daemon`, :mod:`pivoter.observability.logs`),
written out so that ``pivoter run --help`` does not import the daemon;
``tests/unit/test_cli_imports.py`` checks that they agree.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pivoter.cli.commands._common import Subparsers, add_command, set_handler
from pivoter.cli.flags import (
    BindAddress,
    CertDirectory,
    Name,
    NamespacedName,
    Seconds,
    StoreDirectory,
    TextFile,
    Url,
)

DEFAULT_NAMESPACE = "pivoter-system"
"""``pivoter.daemon.DEFAULT_NAMESPACE``."""

DEFAULT_LEASE = "pivoter-leader.pivoter.io"
"""``pivoter.daemon.DEFAULT_LEASE``."""

DEFAULT_STORE = Path("/var/cache/pivoter/bundles")
"""``pivoter.daemon.DEFAULT_STORE``."""

LOG_LEVELS = ("debug", "info", "warning", "error")
"""``pivoter.observability.logs.LEVELS``."""

OLMV1_MODES = ("auto", "serve", "read")
"""``pivoter.olmv1.Mode``."""

DEFAULT_CATALOGD_ADDRESS = ":8082"
"""``pivoter.daemon.DEFAULT_CATALOGD_ADDRESS``."""


def register(subparsers: Subparsers) -> None:
    """Add the ``run`` command."""
    parser = add_command(subparsers, "run", "run the pivoter daemon against a cluster")
    parser.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        default=":8080",
        type=BindAddress("--metrics-bind-address"),
        help="host:port for /metrics, 0 to disable (default :8080)",
    )
    parser.add_argument(
        "--health-probe-bind-address",
        default=":8081",
        type=BindAddress("--health-probe-bind-address"),
        help="host:port for /healthz and /readyz, 0 to disable (default :8081)",
    )
    parser.add_argument(
        "--leader-elect",
        action="store_true",
        help="compete for a Lease so that only one replica runs the controllers",
    )
    parser.add_argument(
        "--leader-election-namespace",
        type=Name("dns-label", "namespace"),
        help=f"namespace of the Lease (default: the Pod's namespace, else {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--leader-election-id",
        default=DEFAULT_LEASE,
        type=Name("dns-subdomain", "Lease name"),
        help=f"name of the Lease (default {DEFAULT_LEASE})",
    )
    parser.add_argument(
        "--leader-election-identity",
        type=Name("text", "identity"),
        help="this replica's identity in the Lease (default: <hostname>_<random uuid>)",
    )
    for flag, default, what in (
        ("--leader-election-lease-duration", 15.0, "how long a Lease stays valid unrenewed"),
        ("--leader-election-renew-deadline", 10.0, "how long the leader retries renewing"),
        ("--leader-election-retry-period", 2.0, "time between attempts"),
    ):
        parser.add_argument(
            flag, type=Seconds(minimum=0.1), default=default, help=f"{what} (default {default}s)"
        )
    parser.add_argument(
        "--log-format", choices=("json", "text"), default="json", help="log format (default json)"
    )
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="default info")
    parser.add_argument(
        "--namespace",
        type=Name("dns-label", "namespace"),
        help="pivoter's namespace: Secrets and ConfigMaps of bundle and catalog sources, "
        f"ResolveSets (default: the Pod's namespace, else {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--store-dir",
        type=StoreDirectory("--store-dir"),
        default=DEFAULT_STORE,
        help=f"content store of unpacked bundles, a volume of the daemon (default {DEFAULT_STORE})",
    )
    parser.add_argument(
        "--content-bind-address",
        default="0",
        type=BindAddress("--content-bind-address"),
        help="host:port serving /bundles/<name>.tgz to authorized readers, 0 to disable (default)",
    )
    parser.add_argument(
        "--content-url",
        default="",
        type=Url(("http", "https"), optional=True),
        help="base URL clients reach the content server at, written to status.contentURL",
    )
    parser.add_argument(
        "--platform-operator-service-account",
        default="",
        type=NamespacedName(optional=True),
        metavar="NAMESPACE/NAME",
        help="the service account that installs PlatformOperators' bundles (default: pivoter's "
        "own identity)",
    )
    add_olmv1_flags(parser)
    parser.add_argument(
        "--adopt-olmv0",
        action="store_true",
        help="adopt the OLM v0 Subscriptions annotated pivoter.io/adopt=true (on themselves or "
        "their Namespace) and drive adoptions started by pivoter adopt "
        "(docs/migrate-from-olm-v0.md)",
    )
    add_webhook_flags(parser)
    set_handler(parser, "pivoter.cli.run:run")


def add_olmv1_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--olmv1`` and the flags of the catalogd-compatible server (docs/olm-v1.md)."""
    parser.add_argument(
        "--olmv1",
        choices=OLMV1_MODES,
        default="auto",
        help="serve OLM v1's ClusterExtension and ClusterCatalog APIs (serve), only read "
        "ClusterCatalogs (read), or serve when pivoter's crds/olmv1/ are installed and no OLM v1 "
        "controller runs (auto, default)",
    )
    parser.add_argument(
        "--catalogd-bind-address",
        default=DEFAULT_CATALOGD_ADDRESS,
        type=BindAddress("--catalogd-bind-address"),
        help="host:port of the catalogd HTTP API serving ClusterCatalogs' content, when OLM v1's "
        f"APIs are served; 0 to disable (default {DEFAULT_CATALOGD_ADDRESS})",
    )
    parser.add_argument(
        "--catalogd-url",
        default="",
        type=Url(("http", "https"), optional=True),
        help="base URL clients reach that API at; ClusterCatalogs' status.urls.base is "
        "<URL>/catalogs/<name> (default: http://localhost:<port>)",
    )


def add_webhook_flags(parser: argparse.ArgumentParser) -> None:
    """Add the ``--webhook-*`` flags (served by :mod:`pivoter.cli.run_webhook`)."""
    parser.add_argument(
        "--webhook-bind-address",
        default="0",
        type=BindAddress("--webhook-bind-address"),
        help="host:port of the admission webhook (TLS), 0 to disable (default)",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        type=CertDirectory(),
        help="directory with tls.crt, tls.key and ca.crt (default: generate at start)",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--webhook-url",
        type=Url(("https",)),
        help="register the webhooks at this https base URL (daemon outside the cluster)",
    )
    target.add_argument(
        "--webhook-service",
        type=NamespacedName(),
        metavar="NAMESPACE/NAME",
        help="register the webhooks through this Service (port 443)",
    )
