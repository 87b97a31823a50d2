"""``pivoter run``: the daemon's flags and the command that starts it (:mod:`pivoter.daemon`).

The defaults and the OLM v1 modes are the daemon's, from :mod:`pivoter.daemon.settings` (which
imports nothing heavy, so ``pivoter run --help`` stays light); only the log levels are written out
here, because their owner (:mod:`pivoter.observability.logs`) is not light, and
``tests/unit/test_cli_imports.py`` checks that they agree. The handler takes the parsed flags,
checks the addresses, sets up logging, turns the flags into
:class:`~pivoter.daemon.settings.RunSettings` and calls :func:`pivoter.daemon.process.run`
(imported when it runs). Exits 0 after a clean shutdown, 1 when it cannot start (bad kubeconfig,
port in use) or leadership was lost (so the kubelet restarts it and it competes again), 2 on
unusable flags.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pivoter.cli.commands._common import Subparsers, add_command, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Address as FlagAddress
from pivoter.cli.flags import (
    CertDirectory,
    Count,
    HostPort,
    Name,
    NamespacedName,
    Seconds,
    StoreDirectory,
    TextFile,
    Url,
)
from pivoter.cli.output import error
from pivoter.daemon.settings import (
    DEFAULT_CATALOGD_ADDRESS,
    DEFAULT_CONCURRENT,
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
    Address,
    Election,
    RunSettings,
    Settings,
    Webhook,
)

if TYPE_CHECKING:
    from pivoter.daemon.hooks import Hooks

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
        "--concurrent",
        type=Count(maximum=64),
        default=DEFAULT_CONCURRENT,
        help="objects of one kind reconciled at once: workers of each input and "
        f"BundleDeployment controller (default {DEFAULT_CONCURRENT})",
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
    parser.add_argument(
        "--global-pull-secret",
        default="",
        type=NamespacedName(optional=True),
        metavar="NAMESPACE/NAME",
        help="a pull secret (.dockerconfigjson) offered to every registry after the Bundle's, "
        "the service account's and the catalog's (OLM v1's flag; docs/registries.md)",
    )
    parser.add_argument(
        "--registries-conf",
        default=None,
        type=TextFile("--registries-conf"),
        metavar="FILE",
        help="a containers registries.conf (v2) whose mirrors, blocked and insecure registries "
        "every pull follows, read again when it changes (docs/registries.md)",
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
    set_handler(parser, run)


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
    parser.add_argument(
        "--catalogd-ca",
        default=None,
        type=TextFile("--catalogd-ca"),
        metavar="FILE",
        help="PEM CA that signed catalogd's HTTPS certificate, to read the ClusterCatalogs "
        "catalogd serves when OLM v1's APIs are not served by pivoter (default: system CAs)",
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


SERVERS = ("metrics", "health-probe", "content", "webhook", "catalogd")
"""The daemon's servers, by the name of their ``--*-bind-address`` flag."""


def run(args: argparse.Namespace, hooks: Hooks | None = None) -> int:
    """Run the daemon until a signal; see the module docstring for exit codes. ``hooks``: only
    from the tests' entry point (``tests/e2e/hooked.py``); ``pivoter`` passes none."""
    from pivoter.daemon.process import DaemonError
    from pivoter.daemon.process import run as run_daemon
    from pivoter.observability import setup_logging
    from pivoter.runtime import ManagerExit

    setup_logging(args.log_format, args.log_level)
    if args.webhook_bind_address and not (args.webhook_url or args.webhook_service):
        error("--webhook-bind-address needs --webhook-url or --webhook-service")
        return int(ExitCode.USAGE)
    try:
        _check_addresses(args)
    except ValueError as exc:
        error(str(exc))
        return int(ExitCode.USAGE)
    except OSError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        outcome = run_daemon(settings_from(args), hooks)
    except DaemonError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    if outcome is ManagerExit.LOST_LEADERSHIP:
        error("leadership was lost; exiting so that a restart competes again")
        return int(ExitCode.FAILURE)
    return int(ExitCode.OK)


def settings_from(args: argparse.Namespace) -> RunSettings:
    """What the flags ask for, as the daemon's settings (the converters of
    :mod:`pivoter.cli.flags` have already typed them and refused malformed values)."""
    election = None
    if args.leader_elect:
        election = Election(
            namespace=args.leader_election_namespace,
            name=args.leader_election_id,
            identity=args.leader_election_identity,
            lease_duration=args.leader_election_lease_duration,
            renew_deadline=args.leader_election_renew_deadline,
            retry_period=args.leader_election_retry_period,
        )
    return RunSettings(
        product=Settings(
            namespace=args.namespace,
            store_dir=args.store_dir,
            content_address=_address(args.content_bind_address),
            content_url=args.content_url,
            platform_operator_service_account=args.platform_operator_service_account,
            olmv1=args.olmv1,
            catalogd_address=_address(args.catalogd_bind_address),
            catalogd_url=args.catalogd_url,
            catalogd_ca=Path(args.catalogd_ca) if args.catalogd_ca else None,
            adopt_olmv0=args.adopt_olmv0,
            webhook=_webhook(args),
            global_pull_secret=args.global_pull_secret,
            registries_conf=Path(args.registries_conf) if args.registries_conf else None,
            concurrent=args.concurrent,
        ),
        kubeconfig=args.kubeconfig,
        metrics_address=_address(args.metrics_bind_address),
        health_address=_address(args.health_probe_bind_address),
        election=election,
    )


def _address(address: FlagAddress | None) -> Address | None:
    """A bind address for the daemon's servers, which listen on IPv4: every interface
    (``:PORT``) is ``0.0.0.0``."""
    if address is None:
        return None
    return (address.host or "0.0.0.0", address.port)


def _webhook(args: argparse.Namespace) -> Webhook | None:
    address = _address(args.webhook_bind_address)
    if address is None:
        return None
    return Webhook(
        address=address,
        cert_dir=args.webhook_cert_dir,
        url=args.webhook_url or "",
        service=args.webhook_service,
    )


def _check_addresses(args: argparse.Namespace) -> None:
    """Fail at start, in one line, when a server of the daemon cannot listen where asked
    (OSError) or two of them are given the same port (ValueError)."""
    from pivoter.cli.listen import check_bindable

    seen: dict[int, str] = {}
    for flag in SERVERS:
        address = _address(getattr(args, f"{flag.replace('-', '_')}_bind_address"))
        if address is None:
            continue
        host, port = address
        if port and port in seen:
            raise ValueError(
                f"--{flag}-bind-address and --{seen[port]}-bind-address share port {port}"
            )
        seen[port] = flag
        if flag in ("content", "webhook", "catalogd"):  # metrics, probes bind first in run()
            check_bindable(host, port, f"--{flag}-bind-address")
