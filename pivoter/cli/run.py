"""``pivoter run``: the daemon's flags; the daemon itself is :mod:`pivoter.daemon`.

Parses the flags, checks the addresses, sets up logging and calls :func:`pivoter.daemon.run`.
Exits 0 after a clean shutdown, 1 when it cannot start (bad kubeconfig, port in use) or
leadership was lost (so the kubelet restarts it and it competes again), 2 on unusable flags.
"""

from __future__ import annotations

import argparse

from pivoter import daemon
from pivoter.cli._common import Subparsers, add_command
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import (
    BindAddress,
    Name,
    NamespacedName,
    Seconds,
    StoreDirectory,
    TextFile,
    Url,
)
from pivoter.cli.listen import check_bindable
from pivoter.cli.output import error
from pivoter.cli.run_webhook import add_webhook_flags, start_webhook
from pivoter.daemon import DEFAULT_LEASE, DEFAULT_NAMESPACE, DEFAULT_STORE
from pivoter.kube import Kube
from pivoter.observability import parse_address, setup_logging
from pivoter.observability.logs import LEVELS
from pivoter.runtime import ManagerExit


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
    parser.add_argument("--log-level", choices=LEVELS, default="info", help="default info")
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
    add_webhook_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the daemon until a signal; see the module docstring for exit codes."""
    setup_logging(args.log_format, args.log_level)
    if parse_address(args.webhook_bind_address) and not (args.webhook_url or args.webhook_service):
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

    def webhook(kube: Kube, namespace: str) -> daemon.Server | None:
        return start_webhook(kube, args, namespace)

    try:
        outcome = daemon.run(_options(args), webhook)
    except daemon.DaemonError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    if outcome is ManagerExit.LOST_LEADERSHIP:
        error("leadership was lost; exiting so that a restart competes again")
        return int(ExitCode.FAILURE)
    return int(ExitCode.OK)


def _options(args: argparse.Namespace) -> daemon.Options:
    election = None
    if args.leader_elect:
        election = daemon.Election(
            namespace=args.leader_election_namespace,
            name=args.leader_election_id,
            identity=args.leader_election_identity,
            lease_duration=args.leader_election_lease_duration,
            renew_deadline=args.leader_election_renew_deadline,
            retry_period=args.leader_election_retry_period,
        )
    return daemon.Options(
        kubeconfig=args.kubeconfig,
        metrics_address=parse_address(args.metrics_bind_address),
        health_address=parse_address(args.health_probe_bind_address),
        content_address=parse_address(args.content_bind_address),
        election=election,
        namespace=args.namespace,
        store_dir=args.store_dir,
        content_url=args.content_url,
        platform_operator_service_account=args.platform_operator_service_account,
    )


def _check_addresses(args: argparse.Namespace) -> None:
    """Fail at start, in one line, when a server of the daemon cannot listen where asked
    (OSError) or two of them are given the same port (ValueError)."""
    seen: dict[int, str] = {}
    for flag in ("metrics", "health-probe", "content", "webhook"):
        address = parse_address(getattr(args, f"{flag.replace('-', '_')}_bind_address"))
        if address is None:
            continue
        host, port = address
        if port and port in seen:
            raise ValueError(
                f"--{flag}-bind-address and --{seen[port]}-bind-address share port {port}"
            )
        seen[port] = flag
        if flag in ("content", "webhook"):  # metrics and probes bind first thing in run()
            check_bindable(host, port, f"--{flag}-bind-address")
