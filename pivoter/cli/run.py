"""``pivoter run``: starts the daemon (:mod:`pivoter.daemon`); its flags are
:mod:`pivoter.cli.commands.run`.

Takes the parsed flags, checks the addresses, sets up logging, turns the flags into
:class:`~pivoter.daemon.settings.RunSettings` and calls :func:`pivoter.daemon.process.run`.
Exits 0 after a clean shutdown, 1 when it cannot start (bad kubeconfig, port in use) or
leadership was lost (so the kubelet restarts it and it competes again), 2 on unusable flags.
"""

from __future__ import annotations

import argparse

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Address as FlagAddress
from pivoter.cli.listen import check_bindable
from pivoter.cli.output import error
from pivoter.daemon.hooks import Hooks
from pivoter.daemon.process import DaemonError
from pivoter.daemon.process import run as run_daemon
from pivoter.daemon.settings import Address, Election, RunSettings, Settings, Webhook
from pivoter.observability import setup_logging
from pivoter.runtime import ManagerExit

SERVERS = ("metrics", "health-probe", "content", "webhook", "catalogd")
"""The daemon's servers, by the name of their ``--*-bind-address`` flag."""


def run(args: argparse.Namespace, hooks: Hooks | None = None) -> int:
    """Run the daemon until a signal; see the module docstring for exit codes. ``hooks``: only
    from the tests' entry point (``tests/e2e/hooked.py``); ``pivoter`` passes none."""
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
            adopt_olmv0=args.adopt_olmv0,
            webhook=_webhook(args),
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
