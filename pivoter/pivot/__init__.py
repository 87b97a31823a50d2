"""The grouped pivot: install one ResolveSet revision of an input as one group of child
BundleDeployments, and revert the whole group to the last successful revision on failure.

:class:`PivotMachine` is the state machine (docs/pivot.md), :class:`Children` the child
BundleDeployments it writes and reads, :mod:`pivoter.pivot.naming` their names within rukpak's
45-character limit. Called by the controllers of every input kind
(:mod:`pivoter.inputs.engine`).
"""

from pivoter.pivot.children import (
    ANNOTATION_UNINSTALL,
    REASON_CHILD_MISSING,
    Children,
    ChildReport,
    ChildSettings,
    ChildState,
    KeepObjects,
    UninstallableBundle,
    desired_child,
    keep_on_delete,
    state_of,
)
from pivoter.pivot.machine import Event, PivotJob, PivotMachine, StepResult
from pivoter.pivot.naming import (
    ANNOTATION_BUNDLE,
    ANNOTATION_INPUT,
    ANNOTATION_PACKAGE,
    ANNOTATION_REVISION,
    ANNOTATION_VERSION,
    LABEL_PACKAGE,
    MAX_CHILD_NAME,
    child_labels,
    child_name,
    children_selector,
)
from pivoter.pivot.prepare import Pending, Prepared, PrepareFailed, Preparer
from pivoter.pivot.state import FailureCause, Phase, PivotHead, PivotRecord

__all__ = [
    "ANNOTATION_BUNDLE",
    "ANNOTATION_INPUT",
    "ANNOTATION_PACKAGE",
    "ANNOTATION_REVISION",
    "ANNOTATION_UNINSTALL",
    "ANNOTATION_VERSION",
    "LABEL_PACKAGE",
    "MAX_CHILD_NAME",
    "REASON_CHILD_MISSING",
    "ChildReport",
    "ChildSettings",
    "ChildState",
    "Children",
    "Event",
    "FailureCause",
    "KeepObjects",
    "Pending",
    "Phase",
    "PivotHead",
    "PivotJob",
    "PivotMachine",
    "PivotRecord",
    "PrepareFailed",
    "Prepared",
    "Preparer",
    "StepResult",
    "UninstallableBundle",
    "child_labels",
    "child_name",
    "children_selector",
    "desired_child",
    "keep_on_delete",
    "state_of",
]
