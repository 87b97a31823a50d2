"""Resolutions: from catalogs to ResolveSet revisions to grouped pivots, for every input kind.

The ``Resolution`` controller (:func:`setup`) and the machinery the PlatformOperator controller
shares: :class:`InputEngine` (the pivoter loop), :class:`InputReconciler` (fetch, delete, status),
:class:`InputSpec` and :class:`Record`. See docs/pivot.md.
"""

from pivoter.inputs.controller import CONTROLLER_NAME, children_of, resolution_kind, setup
from pivoter.inputs.engine import InputEngine
from pivoter.inputs.outcome import Outcome
from pivoter.inputs.reconciler import FINALIZER, InputReconciler, Kind
from pivoter.inputs.record import Record
from pivoter.inputs.revisionplan import plan, summary
from pivoter.inputs.spec import (
    ANNOTATION_APPROVED_REVISION,
    ANNOTATION_PINNED_REVISION,
    ANNOTATION_RETRY,
    InputSpec,
    from_resolution,
)

__all__ = [
    "ANNOTATION_APPROVED_REVISION",
    "ANNOTATION_PINNED_REVISION",
    "ANNOTATION_RETRY",
    "CONTROLLER_NAME",
    "FINALIZER",
    "InputEngine",
    "InputReconciler",
    "InputSpec",
    "Kind",
    "Outcome",
    "Record",
    "children_of",
    "from_resolution",
    "plan",
    "resolution_kind",
    "setup",
    "summary",
]
