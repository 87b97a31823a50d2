"""The daemon's product wired once: every controller, cache and server, from :class:`Settings`.

:func:`build` registers on a Manager what ``pivoter run`` runs: the Bundle and BundleDeployment
controllers on one content store, the catalogs (pivoter's Catalogs, OLM's CatalogSources and
catalogd's ClusterCatalogs read into one cache), the revision store of ResolveSets, the input
controllers (Resolutions, PlatformOperators; ClusterCatalogs and ClusterExtensions when OLM v1's
APIs are served, :mod:`pivoter.olmv1.mode`; the OLM v0 adoption controller when asked), and
starts the content server, the catalogd API and the admission webhook. ``--olmv1=auto`` that
reads with both CRDs installed registers OLM v1's controllers idle and decides again while it
runs (:class:`pivoter.AutoMode`); when it flips to serve, the ClusterCatalog reader
stops, the controllers start working and the catalogd API starts (the admission webhook's
ClusterExtension rules wait for a restart). While OLM v1's APIs are served, what OLM v1 left
behind is checked (:class:`pivoter.olmv1.leftovers.LeftoverMonitor`). ``pivoter run``
(:mod:`pivoter.daemon.process`) and every test fixture that runs the controllers in its own
process call it; a fixture that wants less says so in :class:`Settings` (its :class:`Scope`, no
server address, ``olmv1="read"``), and a test's fault hooks come in :class:`Hooks`.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pivoter import catalogs, inputs, olmv0, olmv1, platformoperators, resolvesets
from pivoter.apis.resources import (
    IMAGE_CONTENT_SOURCE_POLICIES,
    IMAGE_DIGEST_MIRROR_SETS,
    IMAGE_TAG_MIRROR_SETS,
    PLATFORM_OPERATORS,
    RESOLUTIONS,
)
from pivoter.catalogs import CatalogCache, SourceSettings
from pivoter.catalogs.foreign import CatalogdCA
from pivoter.catalogs.setup import CLUSTER_CATALOG_READER
from pivoter.contentserver import ContentServer
from pivoter.controllers import provisioning
from pivoter.controllers.bundle import BundleReconciler
from pivoter.daemon.hooks import Hooks
from pivoter.daemon.settings import Scope, Settings, own_namespace
from pivoter.daemon.webhook import start_webhook
from pivoter.inputs import InputReconciler
from pivoter.inputs.pinning import ImagePinner
from pivoter.kube import EventRecorder, NotFound, Resource, Unavailable
from pivoter.kube.identities import Identities
from pivoter.olmv1.leftovers import LeftoverMonitor
from pivoter.olmv1.mode import AutoMode
from pivoter.pivot import Preparer, keep_on_delete
from pivoter.registries import MirrorObjects, RegistryAccessProvider, VerificationPolicyProvider
from pivoter.resolvesets import RevisionStore
from pivoter.runtime import Manager
from provisioners.errors import InvalidSourceError

__all__ = ["Product", "Server", "build"]

log = logging.getLogger("pivoter.run")


class Server(Protocol):
    """A background server the daemon stops on shutdown."""

    def stop(self) -> None:
        """Stop serving."""
        ...


@dataclass
class Product:
    """What :func:`build` registered and started; None where the settings left a part out."""

    namespace: str
    """pivoter's namespace, as resolved."""
    bundles: BundleReconciler
    """The Bundle reconciler (the content server reads the store through it)."""
    registries: RegistryAccessProvider | None = None
    """The pull secrets and mirrors every pull uses."""
    cache: CatalogCache | None = None
    revisions: RevisionStore | None = None
    resolutions: InputReconciler | None = None
    platform_operators: InputReconciler | None = None
    olmv1: olmv1.OlmV1 | None = None
    """OLM v1's controllers, once its APIs are served."""
    olmv1_auto: AutoMode | None = None
    """``--olmv1=auto`` deciding again while it reads."""
    leftovers: LeftoverMonitor | None = None
    """The check of what OLM v1 left behind, once its APIs are served."""
    adopter: olmv0.controller.Adopter | None = None
    catalogd_url: str = ""
    """The base URL in ClusterCatalogs' ``status.urls.base``."""
    servers: list[Server] = field(default_factory=list)
    """The servers started (content, catalogd, webhook), stopped by :meth:`stop`."""

    def stop(self) -> None:
        """Stop the servers (the controllers stop with their Manager). Safe to call again."""
        servers, self.servers = self.servers, []
        for server in servers:
            server.stop()


def build(manager: Manager, settings: Settings, hooks: Hooks | None = None) -> Product:
    """Register the product's controllers on ``manager`` and start its servers.

    The controllers run once the Manager starts. Raises what the API server or a server's socket
    raises (:class:`~pivoter.kube.KubeError`, :class:`OSError`), and :class:`ValueError` when the
    settings cannot be honoured (``olmv1="serve"`` without its CRDs); servers already started
    are stopped first.
    """
    hooks = hooks or Hooks()
    recorder = EventRecorder(
        manager.kube,
        reporting_controller="pivoter.io/pivoter",
        reporting_instance=socket.gethostname(),
    )
    namespace = settings.namespace or own_namespace()
    registries = registry_access(manager, settings, namespace)
    product = Product(
        namespace,
        provisioning.setup(
            manager,
            store_dir=settings.store_dir,
            namespace=namespace,
            keep_on_delete=keep_on_delete,
            content_url_base=settings.content_url,
            recorder=recorder,
            health_interval_seconds=settings.health_interval,
            full_check_interval_seconds=settings.full_check_interval,
            registries=registries,
            workers=settings.concurrent,
        ),
        registries=registries,
    )
    try:
        if settings.scope is not Scope.BUNDLES:
            _catalogs_and_inputs(manager, settings, product, recorder, hooks)
        if settings.content_address is not None:
            host, port = settings.content_address
            server = ContentServer(manager.kube, product.bundles, host=host, port=port)
            server.start()
            product.servers.append(server)
        if settings.webhook is not None:
            extensions = product.olmv1 is not None and product.olmv1.extensions is not None
            product.servers.append(
                start_webhook(
                    manager.kube, settings.webhook, namespace, cluster_extensions=extensions
                )
            )
    except BaseException:
        product.stop()
        raise
    return product


def _catalogs_and_inputs(
    manager: Manager, settings: Settings, product: Product, recorder: EventRecorder, hooks: Hooks
) -> None:
    """The catalogs, then (:attr:`Scope.ALL`) the inputs, OLM v1's when served, with the
    tests' hooks; fills ``product``."""
    reachable = _reachable(manager)
    decision = _olmv1_decision(manager, settings.olmv1, reachable=reachable)
    serve_olmv1 = decision.serve
    serve_later = (
        not serve_olmv1
        and reachable
        and olmv1.Mode(settings.olmv1) is olmv1.Mode.AUTO
        and decision.crds_installed
    )
    cache = product.cache = catalogs.setup(
        manager,
        namespace=product.namespace,
        settings=settings.catalog_sources,
        recorder=recorder,
        read_olm=reachable and settings.read_olm_catalogs,
        read_cluster_catalogs=not serve_olmv1,
        catalogd_ca=CatalogdCA(settings.catalogd_ca) if settings.catalogd_ca else None,
        registries=product.registries,
    )
    pinner = (
        ImagePinner(product.registries, reads=manager.reads)
        if product.registries is not None
        else None
    )
    revisions = product.revisions = resolvesets.setup(
        manager, namespace=product.namespace, prepare=pinner.pin if pinner is not None else None
    )
    preparer = Preparer(manager.reads, product.bundles, Identities(manager.kube))
    every_input = settings.scope is Scope.ALL
    if every_input:
        # An input kind whose CRD is not installed would keep the informers from ever syncing
        # (and every controller from starting): set up only the served ones (all of them when
        # the API server cannot be asked; deploy/ installs every CRD).
        if not reachable or _served(manager, RESOLUTIONS):
            product.resolutions = inputs.setup(
                manager,
                cache=cache,
                store=revisions,
                preparer=preparer,
                recorder=recorder,
                workers=settings.concurrent,
            )
        if not reachable or _served(manager, PLATFORM_OPERATORS):
            account = settings.platform_operator_service_account
            product.platform_operators = platformoperators.setup(
                manager,
                cache=cache,
                store=revisions,
                preparer=preparer,
                settings=platformoperators.PlatformOperatorSettings(
                    service_account=(
                        {"namespace": account[0], "name": account[1]} if account else None
                    )
                ),
                recorder=recorder,
                workers=settings.concurrent,
            )
    olm = None
    if serve_olmv1 or serve_later:
        olm = olmv1.setup(
            manager,
            cache=cache,
            store=revisions,
            preparer=preparer,
            base_url=settings.catalogd_url.rstrip("/"),
            source_settings=dataclasses.replace(
                settings.cluster_catalog_sources
                or SourceSettings(
                    workdir=Path(tempfile.mkdtemp(prefix="pivoter-clustercatalogs-"))
                ),
                registries=product.registries,
            ),
            recorder=recorder,
            workers=settings.concurrent,
            extensions=every_input,
            serving=serve_olmv1,
        )
    if olm is not None and serve_olmv1:
        product.olmv1 = olm
        _serve_catalogd(settings, product, olm)
        _watch_leftovers(manager, product, recorder)
    elif reachable and olmv1.Mode(settings.olmv1) is olmv1.Mode.AUTO:
        _decide_again(
            manager, settings, product=product, recorder=recorder, decision=decision, idle=olm
        )
    if every_input and settings.adopt_olmv0:
        if reachable and _served(manager, olmv0.SUBSCRIPTIONS):
            product.adopter = olmv0.controller.setup(manager, recorder, on_step=hooks.adoption_step)
        else:
            log.warning("--adopt-olmv0: OLM v0's Subscriptions are not served; nothing to adopt")
    if hooks.pivot_transition is not None:
        extensions = olm.extensions if olm is not None else None
        for reconciler in (product.resolutions, product.platform_operators, extensions):
            if reconciler is not None:
                reconciler.engine.on_transition = hooks.pivot_transition


def registry_access(manager: Manager, settings: Settings, namespace: str) -> RegistryAccessProvider:
    """The pull secrets and mirrors of every pull: the global pull secret, ``registries.conf``
    (checked now: a malformed file stops the daemon at start with its message, as a pull would
    fail with it later) and OpenShift's mirror objects, read from informers for the kinds the
    API server serves."""
    readers: dict[str, Callable[[], Iterable[Mapping[str, Any]]]] = {}
    for key, resource in (
        ("digest_sets", IMAGE_DIGEST_MIRROR_SETS),
        ("tag_sets", IMAGE_TAG_MIRROR_SETS),
        ("content_source_policies", IMAGE_CONTENT_SOURCE_POLICIES),
    ):
        try:
            manager.kube.resource(resource.api_version, resource.kind)
        except (NotFound, Unavailable):
            continue  # not served here (not OpenShift): no mirrors of that kind
        readers[key] = manager.informer_for(resource).store.list
    provider = RegistryAccessProvider(
        manager.kube,
        namespace,
        global_pull_secret=settings.global_pull_secret,
        registries_conf=settings.registries_conf,
        mirror_objects=MirrorObjects(**readers),
        verification=VerificationPolicyProvider(manager.kube, namespace),
    )
    if settings.registries_conf is not None:
        try:
            provider.mirrors()
        except InvalidSourceError as exc:
            raise ValueError(str(exc)) from None
    return provider


def _reachable(manager: Manager) -> bool:
    """Whether the API server answers at start. Discovering OLM's and catalogd's kinds needs it;
    the controllers wait for it themselves (their informers retry), so the daemon starts without
    those two readers when it does not."""
    try:
        manager.kube.request("GET", "/version")
    except Unavailable as exc:
        log.warning("API server unreachable at start (%s): not reading OLM/catalogd catalogs", exc)
        return False
    return True


def _serve_catalogd(settings: Settings, product: Product, served: olmv1.OlmV1) -> None:
    """Start the catalogd API, if it has an address; the ClusterCatalogs' base URL is
    ``catalogd_url``, else the address the server bound, as seen from this host."""
    product.catalogd_url = served.catalogs.base_url
    if settings.catalogd_address is None:
        return
    host, port = settings.catalogd_address
    server = served.start_server(host, port)
    product.servers.append(server)
    if not settings.catalogd_url:
        host = "localhost" if host in ("", "0.0.0.0", "::") else host
        product.catalogd_url = served.catalogs.base_url = f"http://{host}:{server.port}"


def _olmv1_decision(manager: Manager, mode: str, *, reachable: bool) -> olmv1.ModeDecision:
    """Whether this daemon serves OLM v1's APIs (:func:`pivoter.olmv1.decide`), logged with why.
    With the API server unreachable at start, ``auto`` reads (nothing could be checked) until a
    restart."""
    decided = olmv1.Mode(mode)
    if not reachable and decided is not olmv1.Mode.SERVE:
        log.warning("OLM v1 APIs: not served (the API server was unreachable at start)")
        return olmv1.ModeDecision(
            False, "the API server was unreachable at start", crds_installed=False
        )
    try:
        decision = olmv1.decide(manager.kube, decided)
    except olmv1.OlmV1Error as exc:
        raise ValueError(str(exc)) from exc
    log.info("OLM v1 APIs: %s (%s)", "served" if decision.serve else "not served", decision.reason)
    return decision


def _decide_again(
    manager: Manager,
    settings: Settings,
    *,
    product: Product,
    recorder: EventRecorder,
    decision: olmv1.ModeDecision,
    idle: olmv1.OlmV1 | None,
) -> None:
    """``auto`` that reads: decide again while running; serve with the ``idle`` controllers when
    the answer flips (without them, the CRDs were missing at start: a restart serves)."""

    def serve(now: olmv1.ModeDecision) -> None:
        if idle is None:
            log.warning(
                "OLM v1 APIs: would now be served (%s), but their CRDs were not installed when "
                "pivoter started: restart pivoter to serve them",
                now.reason,
            )
            return
        _start_serving(
            manager, settings, product=product, recorder=recorder, olm=idle, decision=now
        )

    auto = product.olmv1_auto = AutoMode(
        manager.kube, serve, first=decision, interval=settings.olmv1_recheck
    )
    product.servers.append(auto)
    auto.start()


def _start_serving(
    manager: Manager,
    settings: Settings,
    *,
    product: Product,
    recorder: EventRecorder,
    olm: olmv1.OlmV1,
    decision: olmv1.ModeDecision,
) -> None:
    """The switch of ``auto`` from reading to serving, in the running daemon: stop reading
    ClusterCatalogs from catalogd, start the catalogd API, let the idle controllers work."""
    log.info("OLM v1 APIs: now served (%s)", decision.reason)
    for controller in manager.controllers:
        if controller.name == CLUSTER_CATALOG_READER:
            controller.stop()
    try:
        _serve_catalogd(settings, product, olm)
    except OSError as exc:
        log.error("OLM v1 APIs: cannot start the catalogd HTTP API: %s", exc)
    olm.start_serving()
    product.olmv1 = olm
    _watch_leftovers(manager, product, recorder)


def _watch_leftovers(manager: Manager, product: Product, recorder: EventRecorder) -> None:
    """Check what OLM v1 left behind while serving its APIs, on the replica that leads."""
    monitor = product.leftovers = LeftoverMonitor(
        manager.kube, recorder, active=lambda: manager.wait_controllers_started(0)
    )
    product.servers.append(monitor)
    monitor.start()


def _served(manager: Manager, resource: Resource) -> bool:
    try:
        manager.kube.resource(resource.api_version, resource.kind)
    except NotFound:
        log.warning(
            "%s is not served (its CRD is not installed): not running its controller", resource.kind
        )
        return False
    return True
