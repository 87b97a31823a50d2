"""The Subscriptions that ask to be adopted (``pivoter run --adopt-olmv0``): start each
adoption, or say why it cannot start.

A Subscription asks with the annotation :data:`ANNOTATION_ADOPT` (``pivoter.io/adopt: "true"``)
on itself or on its Namespace. Its key, ``<namespace>/<name>``, is reconciled on every change of
the Subscription or its Namespace: when no adoption Resolution exists yet, the Subscription is
surveyed and checked (:mod:`pivoter.olmv0.refusals`; with the dependencies OLM v0 installed for
it, :mod:`pivoter.olmv0.groups`); a refusal is written on the Subscription
(annotation :data:`ANNOTATION_REFUSED`, and a Warning Event) and looked at again every minute,
anything else starts the adoption (:func:`pivoter.olmv0.handover.start`). Once the Resolution
exists this controller leaves it to :mod:`pivoter.olmv0.adoptions`, which drives it to the end
(once the start has returned, :class:`~pivoter.olmv0.adoptions.Starts`).

Registered by :func:`pivoter.olmv0.controller.setup`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from pivoter.apis.resources import NAMESPACES, RESOLUTIONS
from pivoter.kube import EventRecorder, Kube, NotFound, Object
from pivoter.olmv0 import groups, handover
from pivoter.olmv0.adoptions import Starts
from pivoter.olmv0.mapping import resolution_name
from pivoter.olmv0.refusals import refusals
from pivoter.olmv0.resources import SUBSCRIPTIONS
from pivoter.olmv0.survey import survey
from pivoter.runtime.cache import split_key
from pivoter.runtime.controller import Result
from pivoter.runtime.informer import Informer
from pivoter.runtime.manager import Manager

__all__ = [
    "ANNOTATION_ADOPT",
    "ANNOTATION_REFUSED",
    "CONTROLLER",
    "SubscriptionAdopter",
    "register",
]

log = logging.getLogger(__name__)

CONTROLLER = "olmv0-adoption"
ANNOTATION_ADOPT = "pivoter.io/adopt"
"""``"true"`` on a Subscription, or on a Namespace for all its Subscriptions: adopt it."""
ANNOTATION_REFUSED = "olmv0.pivoter.io/adoption-refused"
"""On a Subscription that asked: why it cannot be adopted (removed once it can)."""
REFUSED_PERIOD = 60.0
STARTED_GONE_PERIOD = 5.0


def _annotated(obj: Object) -> bool:
    return (obj["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPT) == "true"


class SubscriptionAdopter:
    """The reconciler of the Subscription controller: key ``<namespace>/<name>``."""

    def __init__(
        self,
        kube: Kube,
        starts: Starts,
        recorder: EventRecorder | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> None:
        self.kube = kube
        self.starts = starts
        self.recorder = recorder
        self.on_step = on_step
        """Tests only: called right after each adoption step is recorded
        (:func:`pivoter.olmv0.handover.step_hook`)."""

    def reconcile(self, key: str) -> Result | None:
        """Start the adoption of Subscription ``key`` if it asks and can be adopted."""
        namespace, name = split_key(key)
        try:
            sub = self.kube.get(SUBSCRIPTIONS, name, namespace)
        except NotFound:
            return None  # deleted, by the adoption itself or by someone else
        if not self._asks(sub, namespace):
            return None
        resolution = resolution_name(namespace, name)
        started = self._started(resolution)
        if started is not None:
            if started["metadata"].get("deletionTimestamp"):
                # An adoption that failed is being deleted: look again once it is gone.
                return Result(requeue_after=STARTED_GONE_PERIOD)
            return None  # the adoptions controller drives it
        wait = _failed_recently(sub)
        if wait > 0:
            return Result(requeue_after=wait)  # tried a moment ago; its failure is on it
        whole = survey(self.kube, namespace)
        asked = next((i for i in whole.installed if i.name == name), None)
        if asked is None:
            return None  # deleted since
        # With the dependencies OLM v0 installed for it (pivoter.olmv0.groups); a dependency
        # some other operator of OLM v0's requires is adopted with that one, not alone.
        group = groups.group_of(asked, whole.installed)
        reasons = groups.held_back_by(group, whole.installed)
        for member in group:
            reasons += refusals(member)
        if reasons:
            self._refuse(sub, "; ".join(reasons))
            return Result(requeue_after=REFUSED_PERIOD)
        self._unrefuse(sub)
        with self.starts.starting(resolution), handover.step_hook(self.on_step):
            handover.start(self.kube, asked, resolution, group[1:])
        log.info("adopting Subscription %s/%s as Resolution %s", namespace, name, resolution)
        return None

    def _asks(self, sub: Object, namespace: str) -> bool:
        """Whether ``sub`` or its Namespace carries :data:`ANNOTATION_ADOPT`."""
        if _annotated(sub):
            return True
        try:
            return _annotated(self.kube.get(NAMESPACES, namespace))
        except NotFound:
            return False

    def _started(self, resolution: str) -> Object | None:
        try:
            return self.kube.get(RESOLUTIONS, resolution)
        except NotFound:
            return None

    def _refuse(self, sub: Object, text: str) -> None:
        """Write why ``sub`` cannot be adopted on it, with a Warning Event (once per reason)."""
        if (sub["metadata"].get("annotations") or {}).get(ANNOTATION_REFUSED) == text:
            return
        self._annotate(sub, text)
        if self.recorder is not None:
            self.recorder.event(sub, "Warning", "AdoptionRefused", "Adopt", text)

    def _unrefuse(self, sub: Object) -> None:
        """Remove a refusal written earlier: ``sub`` can be adopted now."""
        if ANNOTATION_REFUSED in (sub["metadata"].get("annotations") or {}):
            self._annotate(sub, None)

    def _annotate(self, sub: Object, refused: str | None) -> None:
        metadata = sub["metadata"]
        self.kube.merge_patch(
            SUBSCRIPTIONS,
            metadata["name"],
            {"metadata": {"annotations": {ANNOTATION_REFUSED: refused}}},
            metadata["namespace"],
        )


def _failed_recently(sub: Object) -> float:
    """Seconds until an adoption that failed before OLM v0 let go may be tried again (0: now)."""
    text = (sub["metadata"].get("annotations") or {}).get(handover.ANNOTATION_FAILED_AT)
    if not isinstance(text, str) or not text:
        return 0.0
    try:
        at = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    elapsed = (dt.datetime.now(dt.UTC) - at).total_seconds()
    return max(0.0, min(handover.RETRY_FAILED_SECONDS, handover.RETRY_FAILED_SECONDS - elapsed))


def _in_namespace(subscriptions: Informer, ns: Object) -> list[str]:
    """The keys of the cached Subscriptions in Namespace ``ns`` (its annotation asks for all)."""
    name = ns["metadata"]["name"]
    return [
        f"{name}/{s['metadata']['name']}"
        for s in subscriptions.store.list()
        if s["metadata"].get("namespace") == name
    ]


def register(
    manager: Manager,
    starts: Starts,
    recorder: EventRecorder | None = None,
    on_step: Callable[[str], None] | None = None,
) -> SubscriptionAdopter:
    """Register the Subscription controller on ``manager`` (OLM v0's CRDs must be served)."""
    adopter = SubscriptionAdopter(manager.kube, starts, recorder, on_step)
    controller = manager.controller(CONTROLLER, adopter.reconcile)
    subscriptions = manager.informer_for(SUBSCRIPTIONS)
    controller.watch(subscriptions)
    controller.watch(manager.informer_for(NAMESPACES), lambda ns: _in_namespace(subscriptions, ns))
    return adopter
