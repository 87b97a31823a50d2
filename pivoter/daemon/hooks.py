"""Fault-injection points for tests, passed to :func:`pivoter.daemon.product.build`.

The product never reads a test switch from the environment: a test that runs the controllers in
its own process passes :class:`Hooks` to the wiring; a test that runs ``pivoter run`` as a
separate process starts it through its test-only entry point (``tests/e2e/hooked.py``), which
builds the Hooks and hands them to :func:`pivoter.cli.run.run`. ``pivoter`` itself always runs
with none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pivoter.pivot import PivotRecord

__all__ = ["AdoptionStepHook", "Hooks", "PivotHook"]

PivotHook = Callable[["PivotRecord"], None]
"""Called with a pivot's record right after it entered a phase and the phase was persisted."""

AdoptionStepHook = Callable[[str], None]
"""Called with the step an OLM v0 adoption has just recorded, before the step's actions run."""


@dataclass(frozen=True)
class Hooks:
    """Where a test may step in; None everywhere is the product as shipped."""

    pivot_transition: PivotHook | None = None
    """Every input controller's engine calls it (Resolutions, PlatformOperators,
    ClusterExtensions): block to hold pivots in a phase, raise to crash the reconcile there."""
    adoption_step: AdoptionStepHook | None = None
    """The OLM v0 adoption controller calls it (:mod:`pivoter.olmv0.handover`)."""
