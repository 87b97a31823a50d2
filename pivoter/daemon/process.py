"""The daemon process: one client, one Manager, the product, until a signal.

``pivoter run`` (:mod:`pivoter.cli.run`) parses its flags into :class:`RunSettings` and calls
:func:`run`, which builds the Kubernetes client and a :class:`pivoter.runtime.Manager` with its
endpoints and (optionally) leader election, builds the product on it
(:func:`pivoter.daemon.product.build`), and runs until SIGTERM or SIGINT. A failure to start
raises :class:`DaemonError` with a one-line message; the CLI turns it into an exit code.
"""

from __future__ import annotations

import logging

from pivoter.daemon.hooks import Hooks
from pivoter.daemon.product import build
from pivoter.daemon.settings import RunSettings, own_namespace
from pivoter.kube import Kube, KubeConfigError, KubeError, load_client
from pivoter.observability import EndpointsError, Metrics
from pivoter.runtime import LeaderElectionConfig, Manager, ManagerExit, default_identity
from pivoter.runtime.leaderlabel import LeaderLabel

__all__ = ["DaemonError", "run"]

log = logging.getLogger("pivoter.run")


class DaemonError(Exception):
    """The daemon could not start or run; the message is one line for the operator."""


def run(settings: RunSettings, hooks: Hooks | None = None) -> ManagerExit:
    """Run the daemon until a signal; return why the manager stopped. ``hooks``: tests only.

    Raises :class:`DaemonError` when the client, the endpoints or the controllers cannot be set
    up, or an endpoint fails while running.
    """
    try:
        manager = _manager(settings)
    except (KubeConfigError, EndpointsError, ValueError) as exc:
        raise DaemonError(str(exc)) from exc
    try:
        manager.start_endpoints()
    except EndpointsError as exc:
        raise DaemonError(str(exc)) from exc
    try:
        product = build(manager, settings.product, hooks)
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
        product.stop()


def _manager(settings: RunSettings) -> Manager:
    kube = Kube(load_client(settings.kubeconfig))
    config = None
    if settings.election is not None:
        election = settings.election
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
        metrics_address=settings.metrics_address,
        health_address=settings.health_address,
    )
