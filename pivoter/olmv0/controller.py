"""The opt-in adoption controller (``pivoter run --adopt-olmv0``): adopt the OLM v0
Subscriptions that ask for it, level-triggered, and drive every adoption in progress.

A Subscription asks with the annotation ``pivoter.io/adopt: "true"`` on itself or on its
Namespace. Its key (``sub:<namespace>/<name>``) is reconciled on every change of the
Subscription or its Namespace: when no adoption Resolution exists yet, the Subscription is
surveyed and checked (:mod:`pivoter.olmv0.refusals`); a refusal is written on the Subscription
(annotation :data:`ANNOTATION_REFUSED`, and a Warning Event) and looked at again every minute,
anything else starts the adoption (:func:`pivoter.olmv0.handover.start`). Each adoption
Resolution (key ``res:<name>``) is advanced (:func:`pivoter.olmv0.handover.advance`) until it is
``Adopted``, every few seconds and whenever the Resolution or its children change. A daemon
killed at any step finds the step on the Resolution and goes on.

Registered by :func:`setup`, called by :mod:`pivoter.daemon`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pivoter.apis.resources import NAMESPACES, RESOLUTIONS
from pivoter.kube import EventRecorder, Kube, NotFound, Object
from pivoter.olmv0 import handover
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, LABEL_ADOPTED_FROM, resolution_name
from pivoter.olmv0.refusals import refusals
from pivoter.olmv0.resources import SUBSCRIPTIONS
from pivoter.olmv0.survey import survey
from pivoter.runtime.controller import Result
from pivoter.runtime.manager import Manager

__all__ = ["ANNOTATION_ADOPT", "ANNOTATION_REFUSED", "CONTROLLER", "Adopter", "setup"]

log = logging.getLogger(__name__)

CONTROLLER = "olmv0-adoption"
ANNOTATION_ADOPT = "pivoter.io/adopt"
"""``"true"`` on a Subscription, or on a Namespace for all its Subscriptions: adopt it."""
ANNOTATION_REFUSED = "olmv0.pivoter.io/adoption-refused"
"""On a Subscription that asked: why it cannot be adopted (removed once it can)."""
STEP_PERIOD = 2.0
REFUSED_PERIOD = 60.0


class Adopter:
    """The reconciler of the adoption controller."""

    def __init__(self, kube: Kube, recorder: EventRecorder | None = None) -> None:
        self.kube = kube
        self.recorder = recorder

    def reconcile(self, key: str) -> Result | None:
        """Reconcile ``sub:<namespace>/<name>`` or ``res:<name>``."""
        kind, _, rest = key.partition(":")
        if kind == "res":
            progress = handover.advance(self.kube, rest)
            if progress.done:
                log.info("adoption %s: %s: %s", rest, progress.step, progress.message)
                return None
            return Result(requeue_after=STEP_PERIOD)
        namespace, _, name = rest.partition("/")
        return self._subscription(namespace, name)

    def _asks(self, sub: Object, namespace: str) -> bool:
        if (sub["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPT) == "true":
            return True
        try:
            ns = self.kube.get(NAMESPACES, namespace)
        except NotFound:
            return False
        return (ns["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPT) == "true"

    def _subscription(self, namespace: str, name: str) -> Result | None:
        try:
            sub = self.kube.get(SUBSCRIPTIONS, name, namespace)
        except NotFound:
            return None  # deleted, by the adoption itself or by someone else
        if not self._asks(sub, namespace):
            return None
        resolution = resolution_name(namespace, name)
        try:
            self.kube.get(RESOLUTIONS, resolution)
            return None  # started: the res: key drives it
        except NotFound:
            pass
        found = survey(self.kube, namespace, name)
        reasons = refusals(found.installed[0])
        annotations = sub["metadata"].get("annotations") or {}
        if reasons:
            text = "; ".join(reasons)
            if annotations.get(ANNOTATION_REFUSED) != text:
                self.kube.merge_patch(
                    SUBSCRIPTIONS,
                    name,
                    {"metadata": {"annotations": {ANNOTATION_REFUSED: text}}},
                    namespace,
                )
                if self.recorder is not None:
                    self.recorder.event(sub, "Warning", "AdoptionRefused", "Adopt", text)
            return Result(requeue_after=REFUSED_PERIOD)
        if ANNOTATION_REFUSED in annotations:
            self.kube.merge_patch(
                SUBSCRIPTIONS,
                name,
                {"metadata": {"annotations": {ANNOTATION_REFUSED: None}}},
                namespace,
            )
        handover.start(self.kube, found.installed[0], resolution)
        log.info("adopting Subscription %s/%s as Resolution %s", namespace, name, resolution)
        return None


def _subscription_keys(obj: Object) -> Iterable[str]:
    meta = obj["metadata"]
    return [f"sub:{meta.get('namespace', '')}/{meta['name']}"]


def setup(manager: Manager, recorder: EventRecorder | None = None) -> Adopter:
    """Register the adoption controller on ``manager`` (OLM v0's CRDs must be served)."""
    adopter = Adopter(manager.kube, recorder)
    controller = manager.controller(CONTROLLER, adopter.reconcile)
    subscriptions = manager.informer_for(SUBSCRIPTIONS)
    controller.watch(subscriptions, _subscription_keys)

    def in_namespace(ns: Object) -> list[str]:
        name = ns["metadata"]["name"]
        return [
            f"sub:{name}/{s['metadata']['name']}"
            for s in subscriptions.store.list()
            if s["metadata"].get("namespace") == name
        ]

    controller.watch(manager.informer_for(NAMESPACES), in_namespace)

    def adoption(res: Object) -> list[str]:
        step = (res["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION)
        return [f"res:{res['metadata']['name']}"] if step and step != handover.ADOPTED else []

    controller.watch(manager.informer_for(RESOLUTIONS, label_selector=LABEL_ADOPTED_FROM), adoption)
    return adopter
