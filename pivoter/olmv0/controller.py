"""The opt-in adoption of OLM v0 Subscriptions (``pivoter run --adopt-olmv0``): two
level-triggered controllers, one per kind of key.

* :mod:`pivoter.olmv0.adoptrequests` (controller ``olmv0-adoption``, key
  ``<namespace>/<name>`` of a Subscription): a Subscription that asks for it (the annotation
  ``pivoter.io/adopt: "true"`` on itself or on its Namespace) is checked, then refused with the
  reason written on it, or its adoption is started: the adoption Resolution is created.
* :mod:`pivoter.olmv0.adoptions` (controller ``olmv0-handover``, key ``<name>`` of a
  Resolution): every adoption in progress, whoever started it, is advanced step by step until it
  is ``Adopted``.

The first creates the Resolution, the second drives it; all they share is which adoptions are
being started right now (:class:`~pivoter.olmv0.adoptions.Starts`).

Registered by :func:`setup`, called by :mod:`pivoter.daemon`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pivoter.kube import EventRecorder
from pivoter.olmv0 import adoptions, adoptrequests
from pivoter.olmv0.adoptions import AdoptionDriver
from pivoter.olmv0.adoptrequests import SubscriptionAdopter
from pivoter.runtime.manager import Manager

__all__ = ["Adopter", "setup"]


@dataclass(frozen=True, slots=True)
class Adopter:
    """The reconcilers of the two adoption controllers."""

    subscriptions: SubscriptionAdopter
    adoptions: AdoptionDriver


def setup(
    manager: Manager,
    recorder: EventRecorder | None = None,
    *,
    on_step: Callable[[str], None] | None = None,
) -> Adopter:
    """Register both adoption controllers on ``manager`` (OLM v0's CRDs must be served);
    ``on_step``: a test's hook, called right after each adoption step is recorded
    (:func:`pivoter.olmv0.handover.step_hook`)."""
    starts = adoptions.Starts()
    return Adopter(
        subscriptions=adoptrequests.register(manager, starts, recorder, on_step),
        adoptions=adoptions.register(manager, starts, on_step, recorder),
    )
