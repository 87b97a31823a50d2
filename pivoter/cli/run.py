"""``pivoter run``: start the daemon (controllers, leader election, metrics, probes).

Builds the Kubernetes client, a :class:`pivoter.controller.Manager` with its endpoints and
(optionally) leader election, registers the product controllers through
:func:`pivoter.controllers.register`, and runs until SIGTERM or SIGINT. Exits 0 after a clean
shutdown, 1 when it cannot start (bad kubeconfig, port in use) or leadership was lost (so the
kubelet restarts it and it competes again).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from pivoter import catalogs, controllers, platformoperators, resolutions, resolvesets
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
from pivoter.cli.run_webhook import Server, add_webhook_flags, start_webhook
from pivoter.contentserver import ContentServer
from pivoter.controller import LeaderElectionConfig, Manager, ManagerExit, default_identity
from pivoter.controllers import provisioning
from pivoter.kube import (
    EventRecorder,
    Kube,
    KubeConfigError,
    KubeError,
    NotFound,
    Resource,
    Unavailable,
    load_client,
)
from pivoter.kube.identities import Identities
from pivoter.observability import EndpointsError, Metrics, parse_address, setup_logging
from pivoter.observability.logs import LEVELS
from pivoter.pivot import PivotRecord, Preparer

log = logging.getLogger("pivoter.run")

IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "pivoter-system"
DEFAULT_LEASE = "pivoter-leader.pivoter.io"
DEFAULT_STORE = Path("/var/cache/pivoter/bundles")
PAUSE_PIVOT_ENV = "PIVOTER_TEST_PAUSE_PIVOT_AT"
"""Tests only: the pivot phase (docs/pivot.md) at which to block every pivot, to kill the
daemon there."""


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
    try:
        manager = _build_manager(args)
    except (KubeConfigError, EndpointsError, ValueError) as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    namespace = args.namespace or _own_namespace()
    try:
        manager.start_endpoints()
    except EndpointsError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        servers = _setup_product(manager, args, namespace)
    except (KubeError, OSError, ValueError) as exc:
        error(f"cannot set up the controllers: {exc}")
        return int(ExitCode.FAILURE)
    log.info("starting with %d controllers", len(manager.controllers))
    try:
        outcome = manager.run(install_signal_handlers=True)
    except EndpointsError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    finally:
        for server in servers:
            server.stop()
    if outcome is ManagerExit.LOST_LEADERSHIP:
        error("leadership was lost; exiting so that a restart competes again")
        return int(ExitCode.FAILURE)
    return int(ExitCode.OK)


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


def _build_manager(args: argparse.Namespace) -> Manager:
    kube = Kube(load_client(args.kubeconfig))
    election = None
    if args.leader_elect:
        election = LeaderElectionConfig(
            namespace=args.leader_election_namespace or _own_namespace(),
            name=args.leader_election_id,
            identity=args.leader_election_identity or default_identity(),
            lease_duration=args.leader_election_lease_duration,
            renew_deadline=args.leader_election_renew_deadline,
            retry_period=args.leader_election_retry_period,
        )
    return Manager(
        kube,
        metrics=Metrics(),
        leader_election=election,
        metrics_address=parse_address(args.metrics_bind_address),
        health_address=parse_address(args.health_probe_bind_address),
    )


def _setup_product(manager: Manager, args: argparse.Namespace, namespace: str) -> list[Server]:
    """Register the product controllers and start the HTTP servers; return the servers."""
    recorder = EventRecorder(
        manager.kube,
        reporting_controller="pivoter.io/pivoter",
        reporting_instance=socket.gethostname(),
    )
    bundles = provisioning.setup(
        manager,
        store_dir=args.store_dir,
        namespace=namespace,
        content_url_base=args.content_url,
        recorder=recorder,
    )
    read_olm = True
    try:
        manager.kube.request("GET", "/version")
    except Unavailable as exc:
        # Discovering OLM's and catalogd's kinds needs the API server; the controllers wait for
        # it themselves (their informers retry), so start without those two readers.
        log.warning("API server unreachable at start (%s): not reading OLM/catalogd catalogs", exc)
        read_olm = False
    cache = catalogs.setup(manager, namespace=namespace, recorder=recorder, read_olm=read_olm)
    revisions = resolvesets.setup(manager, namespace=namespace)
    preparer = Preparer(manager.kube, bundles, Identities(manager.kube))
    # An input kind whose CRD is not installed would keep the informers from ever syncing (and
    # every controller from starting): set up only the served ones (all of them when the API
    # server cannot be asked; deploy/ installs every CRD).
    inputs = []
    if not read_olm or _served(manager, resolutions.RESOLUTIONS):
        inputs.append(
            resolutions.setup(
                manager, cache=cache, store=revisions, preparer=preparer, recorder=recorder
            )
        )
    if not read_olm or _served(manager, platformoperators.PLATFORM_OPERATORS):
        operators = platformoperators.setup(
            manager,
            cache=cache,
            store=revisions,
            preparer=preparer,
            settings=platformoperators.Settings(
                service_account=_service_account(args.platform_operator_service_account)
            ),
            recorder=recorder,
        )
        inputs.append(operators)
    pause_at = os.environ.get(PAUSE_PIVOT_ENV, "")
    if pause_at:
        for reconciler in inputs:
            reconciler.engine.on_transition = _pause_hook(pause_at)
    controllers.register(manager)
    servers: list[Server] = []
    content = parse_address(args.content_bind_address)
    if content is not None:
        server = ContentServer(manager.kube, bundles, host=content[0], port=content[1])
        server.start()
        servers.append(server)
    webhook = start_webhook(manager.kube, args, namespace)
    if webhook is not None:
        servers.append(webhook)
    return servers


def _pause_hook(phase: str) -> Callable[[PivotRecord], None]:
    """Fault-injection hook for tests: block the pivot right after it entered ``phase`` (and
    the phase was persisted), so that a test can kill the daemon exactly there."""

    def hook(record: PivotRecord) -> None:
        if record.phase.value == phase:
            log.warning(
                "%s=%s: pausing the pivot to revision %d", PAUSE_PIVOT_ENV, phase, record.revision
            )
            threading.Event().wait()

    return hook


def _served(manager: Manager, resource: Resource) -> bool:
    try:
        manager.kube.resource(resource.api_version, resource.kind)
    except NotFound:
        log.warning(
            "%s is not served (its CRD is not installed): not running its controller", resource.kind
        )
        return False
    return True


def _service_account(text: str) -> dict[str, str] | None:
    if not text:
        return None
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name:
        raise ValueError(f"--platform-operator-service-account {text!r}: expected NAMESPACE/NAME")
    return {"namespace": namespace, "name": name}


def _own_namespace() -> str:
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE
