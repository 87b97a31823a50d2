"""``pivoter run``: starts the daemon (:mod:`pivoter.daemon`); its flags are
:mod:`pivoter.cli.commands.run`.

Takes the parsed flags, checks the addresses, sets up logging and calls :func:`pivoter.daemon.run`.
Exits 0 after a clean shutdown, 1 when it cannot start (bad kubeconfig, port in use) or
leadership was lost (so the kubelet restarts it and it competes again), 2 on unusable flags.
"""

from __future__ import annotations

import argparse

from pivoter import daemon
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.listen import check_bindable
from pivoter.cli.output import error
from pivoter.cli.run_webhook import start_webhook
from pivoter.kube import Kube
from pivoter.observability import parse_address, setup_logging
from pivoter.runtime import ManagerExit


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

    def webhook(kube: Kube, namespace: str, cluster_extensions: bool) -> daemon.Server | None:
        return start_webhook(kube, args, namespace, cluster_extensions=cluster_extensions)

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
        olmv1=args.olmv1,
        catalogd_address=parse_address(args.catalogd_bind_address),
        catalogd_url=args.catalogd_url,
        adopt_olmv0=args.adopt_olmv0,
    )


def _check_addresses(args: argparse.Namespace) -> None:
    """Fail at start, in one line, when a server of the daemon cannot listen where asked
    (OSError) or two of them are given the same port (ValueError)."""
    seen: dict[int, str] = {}
    for flag in ("metrics", "health-probe", "content", "webhook", "catalogd"):
        address = parse_address(getattr(args, f"{flag.replace('-', '_')}_bind_address"))
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
