"""``pivoter run``: the daemon's flags; the command is :mod:`pivoter.cli.run`.

The defaults and the OLM v1 modes are the daemon's, from :mod:`pivoter.daemon.settings` (which
imports nothing heavy, so ``pivoter run --help`` stays light). Only the log levels are written out
here, because their owner (:mod:`pivoter.observability.logs`) is not light;
``tests/unit/test_cli_imports.py`` checks that they agree, and that the modes are those of
:class:`pivoter.olmv1.Mode`.
"""

from __future__ import annotations

import argparse

from pivoter.cli.commands._common import Subparsers, add_command, set_handler
from pivoter.cli.flags import (
    CertDirectory,
    HostPort,
    Name,
    NamespacedName,
    Seconds,
    StoreDirectory,
    TextFile,
    Url,
)
from pivoter.daemon.settings import (
    DEFAULT_CATALOGD_ADDRESS,
    DEFAULT_CONTENT_ADDRESS,
    DEFAULT_HEALTH_ADDRESS,
    DEFAULT_LEASE,
    DEFAULT_LEASE_DURATION,
    DEFAULT_METRICS_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_OLMV1,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    DEFAULT_STORE,
    DEFAULT_WEBHOOK_ADDRESS,
    OLMV1_MODES,
)

LOG_LEVELS = ("debug", "info", "warning", "error")
"""``pivoter.observability.logs.LEVELS``."""


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
        default=DEFAULT_METRICS_ADDRESS,
        type=HostPort("--metrics-bind-address", every_interface=True, off=True),
        help=f"host:port for /metrics, 0 to disable (default {DEFAULT_METRICS_ADDRESS})",
    )
    parser.add_argument(
        "--health-probe-bind-address",
        default=DEFAULT_HEALTH_ADDRESS,
        type=HostPort("--health-probe-bind-address", every_interface=True, off=True),
        help=f"host:port for /healthz and /readyz, 0 to disable (default {DEFAULT_HEALTH_ADDRESS})",
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
        (
            "--leader-election-lease-duration",
            DEFAULT_LEASE_DURATION,
            "how long a Lease stays valid unrenewed",
        ),
        (
            "--leader-election-renew-deadline",
            DEFAULT_RENEW_DEADLINE,
            "how long the leader retries renewing",
        ),
        ("--leader-election-retry-period", DEFAULT_RETRY_PERIOD, "time between attempts"),
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
        default=DEFAULT_CONTENT_ADDRESS,
        type=HostPort("--content-bind-address", every_interface=True, off=True),
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
        default=DEFAULT_OLMV1,
        help="serve OLM v1's ClusterExtension and ClusterCatalog APIs (serve), only read "
        "ClusterCatalogs (read), or serve when pivoter's crds/olmv1/ are installed and no OLM v1 "
        "controller runs (auto, default)",
    )
    parser.add_argument(
        "--catalogd-bind-address",
        default=DEFAULT_CATALOGD_ADDRESS,
        type=HostPort("--catalogd-bind-address", every_interface=True, off=True),
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
    """Add the ``--webhook-*`` flags (served by :mod:`pivoter.daemon.webhook`)."""
    parser.add_argument(
        "--webhook-bind-address",
        default=DEFAULT_WEBHOOK_ADDRESS,
        type=HostPort("--webhook-bind-address", every_interface=True, off=True),
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
