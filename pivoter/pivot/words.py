"""What a grouped pivot says to people, in one place: the templates of the pivot machine's
messages and Events and of the ``Progressing`` messages the engine derives from a pivot record.

Nothing decides by reading these words back: the machine records a :class:`FailureCause` and a
phase beside each message, and the status modules of every input kind decide from those. A
template can be reworded freely; tests/pivot/test_reworded_units.py rewords every one of them and
checks that no phase, cause, reason, condition status or decision changes.

Each template is formatted with named fields (``str.format``), so the fields a template may use
are listed beside it.
"""

from __future__ import annotations

__all__ = [
    "DEADLINE_PREPARING",
    "DEADLINE_WAITING",
    "EVENT_APPLIED",
    "EVENT_FAILED",
    "EVENT_INSTALLED",
    "EVENT_PREPARED",
    "EVENT_ROLLED_BACK",
    "EVENT_ROLLING_BACK",
    "EVENT_SUCCEEDED",
    "FAILED_CHILD",
    "NOT_INSTALLABLE",
    "NOT_READY",
    "NO_ROLLBACK_OFF",
    "NO_ROLLBACK_TARGET",
    "PROGRESS_FAILED",
    "PROGRESS_PIVOTING",
    "PROGRESS_ROLLED_BACK",
    "PROGRESS_ROLLING_BACK",
    "PROGRESS_SUCCEEDED",
    "RECREATING",
    "ROLLBACK_INCOMPLETE",
]

# -- why a pivot failed (the record's message) ------------------------------------------------

NOT_INSTALLABLE = "bundle {bundle} of package {package} cannot be installed: {why}"
DEADLINE_PREPARING = "the progress deadline of {seconds:.0f}s passed while {waiting}"
DEADLINE_WAITING = "the progress deadline of {seconds:.0f}s passed; {not_ready}"
FAILED_CHILD = (
    "bundle {bundle} of package {package} failed (BundleDeployment {child}, {reason}): {why}"
)
NOT_READY = "bundle {bundle}{where} is {state}: {why}"
"""One child that is not ready (``where`` is `` (BundleDeployment NAME)`` or empty)."""
NO_ROLLBACK_OFF = "{why} (automatic rollback is off)"
NO_ROLLBACK_TARGET = "{why} (no earlier successful revision to revert to)"
ROLLBACK_INCOMPLETE = (
    "{why}; the rollback to revision {previous} did not complete within {seconds:.0f}s: {not_ready}"
)
RECREATING = "is missing (deleted, or not created yet); creating it"
"""How a child of the target that is not there is reported while the pivot creates it."""

# -- Events -----------------------------------------------------------------------------------

EVENT_PREPARED = "Prepared revision {revision}: {summary}"
EVENT_APPLIED = "Applied the bundles of revision {revision}"
EVENT_INSTALLED = "Every bundle of revision {revision} is installed and healthy; pruning"
EVENT_SUCCEEDED = "Revision {revision} is active"
EVENT_ROLLING_BACK = (
    "Pivot to revision {revision} failed, rolling back to revision {previous}: {why}"
)
EVENT_ROLLED_BACK = "Rolled back to revision {previous} after revision {revision} failed"
EVENT_FAILED = "Pivot to revision {revision} failed: {why}"

# -- Progressing, from the pivot record -------------------------------------------------------

PROGRESS_ROLLING_BACK = (
    "revision {revision} failed ({why}); reverting every bundle to revision {previous}"
)
PROGRESS_PIVOTING = "pivot to revision {revision}: {phase}"
PROGRESS_SUCCEEDED = "revision {revision} is installed"
PROGRESS_ROLLED_BACK = (
    "revision {revision} failed and every bundle was reverted to revision {previous}: {why}"
)
PROGRESS_FAILED = "revision {revision} failed: {why}"
