"""The daemon's wiring: one Manager, the product controllers, their HTTP servers, one run.

``pivoter run`` (:mod:`pivoter.cli.run`) parses its flags into :class:`Options` and calls
:func:`run`, which builds the Kubernetes client and a :class:`pivoter.runtime.Manager` with its
endpoints and (optionally) leader election, sets up the product controllers (bundles, catalogs,
ResolveSets, Resolutions, PlatformOperators and the Bundle/BundleDeployment controllers), starts
the content server and the webhook, and runs until SIGTERM or SIGINT. With ``--olmv1`` (decided by
:mod:`pivoter.olmv1.mode`) it also serves OLM v1's ClusterCatalog and ClusterExtension APIs and
the catalogd HTTP API for the catalogs (:mod:`pivoter.olmv1`). A failure to start raises
:class:`DaemonError` with a one-line message; the CLI turns it into an exit code.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pivoter import catalogs, olmv0, olmv1, platformoperators, resolutions, resolvesets
from pivoter.apis.resources import PLATFORM_OPERATORS, RESOLUTIONS
from pivoter.catalogs import SourceSettings
from pivoter.contentserver import ContentServer
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
from pivoter.observability import EndpointsError, Metrics
from pivoter.pivot import PivotRecord, Preparer, keep_on_delete
from pivoter.runtime import LeaderElectionConfig, Manager, ManagerExit, default_identity
from pivoter.runtime.leaderlabel import LeaderLabel

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_NAMESPACE",
    "DEFAULT_STORE",
    "PAUSE_PIVOT_ENV",
    "DaemonError",
    "Election",
    "Options",
    "Server",
    "run",
]

log = logging.getLogger("pivoter.run")

IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "pivoter-system"
DEFAULT_LEASE = "pivoter-leader.pivoter.io"
DEFAULT_STORE = Path("/var/cache/pivoter/bundles")
PAUSE_PIVOT_ENV = "PIVOTER_TEST_PAUSE_PIVOT_AT"
"""Tests only: the pivot phase (docs/pivot.md) at which to block every pivot, to kill the
daemon there."""


class Server(Protocol):
    """A background server the daemon stops on shutdown."""

    def stop(self) -> None:
        """Stop serving."""
        ...


WebhookStarter = Callable[[Kube, str, bool], Server | None]
"""Starts the admission webhook for a client, pivoter's namespace and whether it serves OLM v1's
ClusterExtensions; None when disabled."""

DEFAULT_CATALOGD_ADDRESS = ":8082"


class DaemonError(Exception):
    """The daemon could not start or run; the message is one line for the operator."""


@dataclass(frozen=True)
class Election:
    """Leader election settings; None fields take the defaults of the running Pod."""

    namespace: str | None
    name: str
    identity: str | None
    lease_duration: float
    renew_deadline: float
    retry_period: float


@dataclass(frozen=True)
class Options:
    """What ``pivoter run`` was asked to do (addresses already parsed; None disables)."""

    kubeconfig: str | Path | None
    metrics_address: tuple[str, int] | None
    health_address: tuple[str, int] | None
    content_address: tuple[str, int] | None
    election: Election | None
    namespace: str | None
    store_dir: Path
    content_url: str
    platform_operator_service_account: str
    olmv1: str = "auto"
    """``--olmv1``: auto, serve or read (:class:`pivoter.olmv1.Mode`)."""
    catalogd_address: tuple[str, int] | None = None
    catalogd_url: str = ""
    adopt_olmv0: bool = False
    """``--adopt-olmv0``: run the OLM v0 adoption controller (:mod:`pivoter.olmv0.controller`)."""


def run(options: Options, start_webhook: WebhookStarter | None = None) -> ManagerExit:
    """Run the daemon until a signal; return why the manager stopped.

    Raises :class:`DaemonError` when the client, the endpoints or the controllers cannot be set
    up, or an endpoint fails while running.
    """
    try:
        manager = _build_manager(options)
    except (KubeConfigError, EndpointsError, ValueError) as exc:
        raise DaemonError(str(exc)) from exc
    namespace = options.namespace or own_namespace()
    try:
        manager.start_endpoints()
    except EndpointsError as exc:
        raise DaemonError(str(exc)) from exc
    try:
        servers = _setup_product(manager, options, namespace, start_webhook)
    except (KubeError, OSError, ValueError) as exc:
        raise DaemonError(f"cannot set up the controllers: {exc}") from exc
    label = LeaderLabel.from_environment(manager.kube)
    if label is not None:  # in a Pod: the leader's carries the label (pivoter.runtime.leaderlabel)
        label.mark(False)
        manager.on_leading(label.mark)
    log.info("starting with %d controllers", len(manager.controllers))
    try:
        return manager.run(install_signal_handlers=True)
    except EndpointsError as exc:
        raise DaemonError(str(exc)) from exc
    finally:
        for server in servers:
            server.stop()


def _build_manager(options: Options) -> Manager:
    kube = Kube(load_client(options.kubeconfig))
    config = None
    if options.election is not None:
        election = options.election
        config = LeaderElectionConfig(
            namespace=election.namespace or own_namespace(),
            name=election.name,
            identity=election.identity or default_identity(),
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
        )
    return Manager(
        kube,
        metrics=Metrics(),
        leader_election=config,
        metrics_address=options.metrics_address,
        health_address=options.health_address,
    )


def _setup_product(
    manager: Manager, options: Options, namespace: str, start_webhook: WebhookStarter | None
) -> list[Server]:
    """Register the product controllers and start the HTTP servers; return the servers."""
    recorder = EventRecorder(
        manager.kube,
        reporting_controller="pivoter.io/pivoter",
        reporting_instance=socket.gethostname(),
    )
    bundles = provisioning.setup(
        manager,
        store_dir=options.store_dir,
        namespace=namespace,
        keep_on_delete=keep_on_delete,
        content_url_base=options.content_url,
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
    serve_olmv1 = _serves_olmv1(manager, options, reachable=read_olm)
    cache = catalogs.setup(
        manager,
        namespace=namespace,
        recorder=recorder,
        read_olm=read_olm,
        read_cluster_catalogs=not serve_olmv1,
    )
    revisions = resolvesets.setup(manager, namespace=namespace)
    preparer = Preparer(manager.kube, bundles, Identities(manager.kube))
    # An input kind whose CRD is not installed would keep the informers from ever syncing (and
    # every controller from starting): set up only the served ones (all of them when the API
    # server cannot be asked; deploy/ installs every CRD).
    inputs = []
    if not read_olm or _served(manager, RESOLUTIONS):
        inputs.append(
            resolutions.setup(
                manager, cache=cache, store=revisions, preparer=preparer, recorder=recorder
            )
        )
    if not read_olm or _served(manager, PLATFORM_OPERATORS):
        operators = platformoperators.setup(
            manager,
            cache=cache,
            store=revisions,
            preparer=preparer,
            settings=platformoperators.Settings(
                service_account=_service_account(options.platform_operator_service_account)
            ),
            recorder=recorder,
        )
        inputs.append(operators)
    servers: list[Server] = []
    if serve_olmv1:
        served = olmv1.setup(
            manager,
            cache=cache,
            store=revisions,
            preparer=preparer,
            base_url=_catalogd_url(options),
            source_settings=SourceSettings(
                workdir=Path(tempfile.mkdtemp(prefix="pivoter-clustercatalogs-"))
            ),
            recorder=recorder,
        )
        inputs.append(served.extensions)
        if options.catalogd_address is not None:
            servers.append(served.start_server(*options.catalogd_address))
    if options.adopt_olmv0:
        if read_olm and _served(manager, olmv0.SUBSCRIPTIONS):
            olmv0.controller.setup(manager, recorder)
        else:
            log.warning("--adopt-olmv0: OLM v0's Subscriptions are not served; nothing to adopt")
    pause_at = os.environ.get(PAUSE_PIVOT_ENV, "")
    if pause_at:
        for reconciler in inputs:
            reconciler.engine.on_transition = _pause_hook(pause_at)
    if options.content_address is not None:
        host, port = options.content_address
        server = ContentServer(manager.kube, bundles, host=host, port=port)
        server.start()
        servers.append(server)
    webhook = (
        start_webhook(manager.kube, namespace, serve_olmv1) if start_webhook is not None else None
    )
    if webhook is not None:
        servers.append(webhook)
    return servers


def _serves_olmv1(manager: Manager, options: Options, *, reachable: bool) -> bool:
    """Whether this daemon serves OLM v1's APIs (:func:`pivoter.olmv1.decide`), logged with why.
    With the API server unreachable at start, ``auto`` reads (nothing could be checked)."""
    mode = olmv1.Mode(options.olmv1)
    if not reachable and mode is not olmv1.Mode.SERVE:
        log.warning("OLM v1 APIs: not served (the API server was unreachable at start)")
        return False
    try:
        decision = olmv1.decide(manager.kube, mode)
    except olmv1.OlmV1Error as exc:
        raise ValueError(str(exc)) from exc
    log.info("OLM v1 APIs: %s (%s)", "served" if decision.serve else "not served", decision.reason)
    return decision.serve


def _catalogd_url(options: Options) -> str:
    """The base URL in ClusterCatalogs' ``status.urls.base`` (``--catalogd-url``, else the bind
    address as seen from this host)."""
    if options.catalogd_url:
        return options.catalogd_url.rstrip("/")
    if options.catalogd_address is None:
        return ""
    host, port = options.catalogd_address
    host = "localhost" if host in ("", "0.0.0.0", "::") else host
    return f"http://{host}:{port}"


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


def own_namespace() -> str:
    """The Pod's namespace when running in a cluster, else :data:`DEFAULT_NAMESPACE`."""
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE
