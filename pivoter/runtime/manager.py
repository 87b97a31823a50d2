"""The :class:`Manager` runs pivoter's controllers in one process: shared informers, leader
election, metrics and probe endpoints, signal handling and an orderly shutdown.

``pivoter run`` (its wiring is :mod:`pivoter.daemon`) builds one Manager, sets up the product
controllers on it, and calls :meth:`Manager.run`. The order of things:

1. the metrics and probe endpoints start (a port in use fails here, before any cluster work);
2. every informer starts listing and watching, on every replica (a standby keeps a warm cache);
3. with leader election, the replica that holds the Lease starts the controllers once the caches
   have synced; the others stand by. Without it, controllers start as soon as caches sync;
4. on SIGTERM/SIGINT (or :meth:`Manager.stop`) controllers stop taking keys and finish the
   reconciles in flight, the Lease is released, informers stop, the endpoints close. A second
   signal exits at once.

Losing the Lease stops the controllers immediately and ends :meth:`Manager.run` with
``LOST_LEADERSHIP``: the process exits and its restart competes again from a clean state, as
controller-runtime does. Informers are shared per kind: however many controllers watch
ConfigMaps, there is one list and one watch on ConfigMaps.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from types import FrameType

from pivoter.kube.client import Kube
from pivoter.kube.events import EventRecorder
from pivoter.observability.metrics import Metrics
from pivoter.observability.server import Endpoints
from pivoter.runtime.backoff import RateLimiter
from pivoter.runtime.cachedreads import CachedReads
from pivoter.runtime.controller import DEFAULT_RESYNC, Controller, Reconcile
from pivoter.runtime.informer import Informer
from pivoter.runtime.leader import KubeLeaseLock, LeaderElectionConfig, LeaderElector
from provisioners.apply.resources import Resource

__all__ = ["Manager", "ManagerExit", "default_identity"]

log = logging.getLogger(__name__)


class ManagerExit(enum.Enum):
    """Why :meth:`Manager.run` returned."""

    STOPPED = "stopped"  # asked to stop (signal or stop()): a clean shutdown
    LOST_LEADERSHIP = "lost-leadership"  # the Lease went to someone else or could not be renewed


def default_identity() -> str:
    """A leader-election identity unique to this process: ``<hostname>_<uuid>`` (client-go's)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Manager:
    """Owns informers, controllers, the leader elector and the HTTP endpoints of one process."""

    def __init__(
        self,
        kube: Kube,
        *,
        metrics: Metrics | None = None,
        leader_election: LeaderElectionConfig | None = None,
        metrics_address: tuple[str, int] | None = None,
        health_address: tuple[str, int] | None = None,
        shutdown_timeout: float = 30.0,
    ) -> None:
        self.kube = kube
        self.metrics = metrics or Metrics()
        # Every request of this client (and of the clients derived from it: Identities) is
        # counted in pivoter_kube_requests_total.
        kube.observer = self.metrics.count_kube_request
        self.leader_election = leader_election
        self._leading_hooks: list[Callable[[bool], None]] = []
        self._told_leading = False
        self.shutdown_timeout = shutdown_timeout
        self.controllers: list[Controller] = []
        self.elector: LeaderElector | None = None
        self.exit_reason: ManagerExit | None = None
        self.lost_leadership = threading.Event()
        self._informers: dict[tuple[Resource, str, str], Informer] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._started = False
        self._controllers_started = threading.Event()
        self._signals = 0
        self.metrics_endpoints: Endpoints | None = None
        self.health_endpoints: Endpoints | None = None
        self._metrics_address = metrics_address
        self._health_address = health_address

    # ------------------------------------------------------------------ building

    def informer(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str = "",
    ) -> Informer:
        """The shared informer for ``kind`` (one per kind, namespace and selector)."""
        return self.informer_for(
            self.kube.resource(api_version, kind),
            namespace=namespace,
            label_selector=label_selector,
        )

    def informer_for(
        self, resource: Resource, *, namespace: str | None = None, label_selector: str = ""
    ) -> Informer:
        """Like :meth:`informer` for a known :class:`Resource`."""
        key = (resource, namespace or "", label_selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(
                    self.kube,
                    resource,
                    namespace=namespace,
                    label_selector=label_selector,
                    metrics=self.metrics,
                )
                self._informers[key] = informer
                if self._started:
                    informer.start()
            return informer

    @functools.cached_property
    def reads(self) -> Kube:
        """The client reconcilers read with: ``get`` and ``list`` from this manager's informer
        caches, their own writes read back (:class:`~pivoter.runtime.cachedreads.CachedReads`);
        requests through :attr:`kube`."""
        return CachedReads(self.kube, lambda: self.informers)

    @property
    def informers(self) -> list[Informer]:
        """Every informer created so far."""
        with self._lock:
            return list(self._informers.values())

    def controller(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        workers: int = 1,
        resync_period: float | None = DEFAULT_RESYNC,
        rate_limiter: RateLimiter | None = None,
    ) -> Controller:
        """Create and add a controller; then call ``.watch(manager.informer(...))`` on it."""
        controller = Controller(
            name,
            reconcile,
            workers=workers,
            resync_period=resync_period,
            rate_limiter=rate_limiter,
            metrics=self.metrics,
        )
        self.add(controller)
        return controller

    def event_recorder(self, controller: str) -> EventRecorder:
        """An Event recorder reporting as ``pivoter.io/<controller>`` from this replica."""
        instance = self.leader_election.identity if self.leader_election else socket.gethostname()
        return EventRecorder(
            self.kube, reporting_controller=f"pivoter.io/{controller}", reporting_instance=instance
        )

    def add(self, controller: Controller) -> None:
        """Add a controller built elsewhere (before :meth:`start`)."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"add controller {controller.name} before the manager starts")
            if any(c.name == controller.name for c in self.controllers):
                raise ValueError(f"a controller named {controller.name} is already registered")
            self.controllers.append(controller)

    # ------------------------------------------------------------------ probes

    def caches_synced(self) -> str | None:
        """Readiness check: None once :meth:`start` ran (``pivoter run`` serves the probes while
        it still sets up its controllers and their informers) and every informer has filled its
        cache."""
        with self._lock:
            started = self._started
        if not started:
            return "the controllers are being set up"
        waiting = [str(i) for i in self.informers if not i.has_synced()]
        return f"waiting for {', '.join(waiting)}" if waiting else None

    def leader_election_healthy(self) -> str | None:
        """Health check: None unless leader election is on and neither leading nor standing by
        properly (e.g. renewals failing, Lease unreadable)."""
        if self.elector is None or self.elector.healthy():
            return None
        if self.lost_leadership.is_set():
            return "leadership was lost; the process is shutting down"
        return f"cannot read or renew lease {self.elector.lock.describe()}"

    def election_started(self) -> str | None:
        """Readiness check: None unless leader election is on and has not started yet (a
        replica is ready once it leads or stands by, never before it knows which)."""
        if self.leader_election is not None and self.elector is None:
            return "leader election has not started yet"
        return None

    def ready(self) -> bool:
        """Whether ``/readyz`` would pass."""
        return (
            self.caches_synced() is None
            and self.election_started() is None
            and self.leader_election_healthy() is None
        )

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        """Start endpoints, informers and leader election (or controllers); returns at once."""
        with self._lock:
            if self._started:
                raise RuntimeError("the manager was already started")
            self.start_endpoints()
            self._started = True
            for informer in self._informers.values():
                informer.start()
        if self.leader_election is not None:
            lock = KubeLeaseLock(
                self.kube,
                self.leader_election.namespace,
                self.leader_election.name,
                timeout=max(self.leader_election.retry_period, 1.0),
            )
            self.elector = LeaderElector(
                self.leader_election,
                lock,
                on_started_leading=self._start_controllers,
                on_stopped_leading=self._stopped_leading,
                metrics=self.metrics,
                on_new_leader=lambda holder: log.info("lease is held by %s", holder),
            )
            self.elector.start()
        else:
            self._start_controllers()

    def start_endpoints(self) -> None:
        """Bind and serve /metrics and the probes now (idempotent): ``pivoter run`` calls it
        before any cluster work, so a port in use is reported first; :meth:`start` calls it."""
        if self.metrics_endpoints is not None or self.health_endpoints is not None:
            return
        if self._metrics_address is not None:
            self.metrics_endpoints = Endpoints(
                self._metrics_address, registry=self.metrics.registry, what="metrics"
            )
        if self._health_address is not None:
            try:
                self.health_endpoints = Endpoints(
                    self._health_address,
                    what="health probes",
                    healthz={"ping": lambda: None, "leader-election": self.leader_election_healthy},
                    readyz={
                        "informers-synced": self.caches_synced,
                        "leader-election-started": self.election_started,
                        "leader-election": self.leader_election_healthy,
                    },
                )
            except Exception:
                if self.metrics_endpoints is not None:
                    self.metrics_endpoints.stop()
                raise
        for endpoints in (self.metrics_endpoints, self.health_endpoints):
            if endpoints is not None:
                endpoints.start()

    def _start_controllers(self) -> None:
        threading.Thread(
            target=self._start_controllers_when_synced, name="controller-starter", daemon=True
        ).start()

    def _start_controllers_when_synced(self) -> None:
        for informer in self.informers:
            while not informer.wait_for_sync(1.0):
                if self._stop.is_set():
                    return
        with self._lock:
            if self._stop.is_set() or self.lost_leadership.is_set():
                return
            if self.elector is not None and not self.elector.is_leader():
                return
            for controller in self.controllers:
                controller.start()
            self._controllers_started.set()
        log.info("caches synced; %d controllers running", len(self.controllers))
        with self._lock:
            self._told_leading = True
        self._tell_leading(True)

    def on_leading(self, hook: Callable[[bool], None]) -> None:
        """Call ``hook(True)`` once this process's controllers run (it leads, or there is no
        election) and ``hook(False)`` when they stop (leadership lost, shutdown)."""
        self._leading_hooks.append(hook)

    def _tell_leading(self, leading: bool) -> None:
        for hook in self._leading_hooks:
            try:
                hook(leading)
            except Exception:  # a hook never stops the manager
                log.exception("leadership hook failed")

    def _stopped_leading(self) -> None:
        if self._stop.is_set():
            return  # a requested shutdown: shutdown() stops the controllers
        log.error("leadership lost: stopping all controllers; the process will exit")
        self.lost_leadership.set()
        self.exit_reason = ManagerExit.LOST_LEADERSHIP
        self._stop_controllers()
        self._stop.set()

    def _stop_controllers(self) -> None:
        with self._lock:
            started = self._controllers_started.is_set()
            told, self._told_leading = self._told_leading, False
        if told:
            self._tell_leading(False)
        if started:
            for controller in self.controllers:
                controller.stop(self.shutdown_timeout)

    def wait_controllers_started(self, timeout: float | None = None) -> bool:
        """Block until the controllers have started (caches synced and, if enabled, leading)."""
        return self._controllers_started.wait(timeout)

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (thread- and signal-safe)."""
        self._stop.set()

    def run(self, *, install_signal_handlers: bool = False) -> ManagerExit:
        """Start, block until stopped or leadership is lost, shut down; return why it ended."""
        if install_signal_handlers:
            self.install_signal_handlers()
        self.start()
        try:
            while not self._stop.wait(1.0):
                pass
        finally:
            self.shutdown()
        return self.exit_reason or ManagerExit.STOPPED

    def shutdown(self) -> None:
        """Stop controllers (finishing reconciles in flight), release the Lease, stop informers
        and endpoints. Safe to call more than once."""
        self._stop.set()
        self._stop_controllers()
        if self.elector is not None:
            self.elector.stop(release=True)
        for informer in self.informers:
            informer.stop()
        for endpoints in (self.metrics_endpoints, self.health_endpoints):
            if endpoints is not None:
                endpoints.stop()
        self.metrics_endpoints = self.health_endpoints = None
        log.info("manager shut down (%s)", (self.exit_reason or ManagerExit.STOPPED).value)

    def install_signal_handlers(
        self, signals: Iterable[int] = (signal.SIGTERM, signal.SIGINT)
    ) -> None:
        """First signal: graceful shutdown. Second: exit at once with status 1."""

        def handle(signum: int, _frame: FrameType | None) -> None:
            self._signals += 1
            if self._signals > 1:
                os._exit(1)
            log.info("received %s; shutting down", signal.Signals(signum).name)
            self.stop()

        for signum in signals:
            signal.signal(signum, handle)
