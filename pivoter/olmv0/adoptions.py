"""The adoptions in progress (``pivoter run --adopt-olmv0``): drive each to its end.

An adoption is a Resolution labelled :data:`~pivoter.olmv0.mapping.LABEL_ADOPTED_FROM` whose
step (:data:`~pivoter.olmv0.mapping.ANNOTATION_ADOPTION`) is not yet ``Adopted``, whoever started
it: :mod:`pivoter.olmv0.adoptrequests` or ``pivoter adopt`` (so a command killed halfway
finishes on its own). Its key is the Resolution's name; :func:`pivoter.olmv0.handover.advance`
does what the recorded step needs next, every few seconds and whenever the Resolution changes,
until the adoption is ``Adopted`` or has failed. A daemon killed at any step finds the step on
the Resolution and goes on.

An adoption this process is still starting (:class:`Starts`) is driven once its start has
returned: the Subscription controller runs beside this one, and a start held right after it
recorded ``Planning`` (a test's step hook, to kill the daemon there) holds its adoption too.

Registered by :func:`pivoter.olmv0.controller.setup`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import EventRecorder, Kube, NotFound, Object
from pivoter.olmv0 import handover
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, LABEL_ADOPTED_FROM
from pivoter.olmv0.resources import SUBSCRIPTIONS
from pivoter.runtime.controller import Result
from pivoter.runtime.manager import Manager

__all__ = ["CONTROLLER", "AdoptionDriver", "Starts", "in_progress", "register"]

log = logging.getLogger(__name__)

CONTROLLER = "olmv0-handover"
STEP_PERIOD = 2.0


def in_progress(res: Object) -> list[str]:
    """The key of Resolution ``res`` while it is an adoption not yet adopted (none otherwise)."""
    step = (res["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION)
    return [res["metadata"]["name"]] if step and step != handover.ADOPTED else []


class Starts:
    """The adoptions this process is starting right now (Resolution names), shared by the
    Subscription controller, which starts them, and the adoption controller, which waits."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def starting(self, name: str) -> Iterator[None]:
        """Within the block, adoption ``name`` is being started."""
        with self._lock:
            self._names.add(name)
        try:
            yield
        finally:
            with self._lock:
                self._names.discard(name)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._names


class AdoptionDriver:
    """The reconciler of the adoption controller: key ``<resolution name>``."""

    def __init__(
        self,
        kube: Kube,
        starts: Starts,
        on_step: Callable[[str], None] | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.kube = kube
        self.starts = starts
        self.recorder = recorder
        self.on_step = on_step
        """Tests only: called right after each adoption step is recorded
        (:func:`pivoter.olmv0.handover.step_hook`)."""

    def reconcile(self, name: str) -> Result | None:
        """Advance the adoption of Resolution ``name`` by what its step needs next."""
        if name in self.starts:
            return Result(requeue_after=STEP_PERIOD)
        before = self._step(name)
        with handover.step_hook(self.on_step):
            progress = handover.advance(self.kube, name)
        self._tell(name, before, progress)
        if progress.done:
            log.info("adoption %s: %s: %s", name, progress.step, progress.message)
            return None
        return Result(requeue_after=STEP_PERIOD)

    def _step(self, name: str) -> str:
        try:
            res = self.kube.get(RESOLUTIONS, name)
        except NotFound:
            return ""
        return str((res["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION) or "")

    def _tell(self, name: str, before: str, progress: handover.AdoptionProgress) -> None:
        """Events a person finds with ``kubectl describe``: each step reached (on the
        Resolution), and a failure (on the Subscription, which is still OLM v0's)."""
        if self.recorder is None:
            return
        if progress.step == handover.FAILED:
            namespace, _, subscription = progress.subscription.partition("/")
            if not (namespace and subscription):
                return  # e.g. the Resolution is gone: nothing names the Subscription any more
            try:
                sub = self.kube.get(SUBSCRIPTIONS, subscription, namespace)
            except NotFound:
                return
            self.recorder.event(sub, "Warning", "AdoptionFailed", "Adopt", progress.message)
            return
        if progress.step == before:
            return
        try:
            res = self.kube.get(RESOLUTIONS, name)
        except NotFound:
            return
        self.recorder.event(
            res, "Normal", f"Adoption{progress.step}", "Adopt", progress.message or progress.step
        )


def register(
    manager: Manager,
    starts: Starts,
    on_step: Callable[[str], None] | None = None,
    recorder: EventRecorder | None = None,
) -> AdoptionDriver:
    """Register the adoption controller on ``manager``."""
    driver = AdoptionDriver(manager.kube, starts, on_step, recorder)
    controller = manager.controller(CONTROLLER, driver.reconcile)
    adoptions = manager.informer_for(RESOLUTIONS, label_selector=LABEL_ADOPTED_FROM)
    controller.watch(adoptions, in_progress)
    return driver
