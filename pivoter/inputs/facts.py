"""What one pass of the engine found, as facts: enums that say what is true and, beside them,
the words a person reads. Each input kind's status module decides its conditions and reasons
from the enums (through its own exported reason constants) and copies the words; nothing
decides by reading a message, so rewording one never changes a reason, a condition status or a
decision (tests/inputs/test_reworded_units.py rewords every template and checks that).

Pure values, no cluster access.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pivoter.pivot import FailureCause, Phase, PivotRecord, words

__all__ = [
    "Freshness",
    "FreshnessState",
    "Progress",
    "ProgressState",
    "ResolutionState",
    "Resolved",
    "progress_of",
]


class ResolutionState(enum.Enum):
    """How the pass found its target revision, or why it has none. The values are the reasons
    of a Resolution's ``Resolved`` condition (:mod:`pivoter.apis.pivoter`)."""

    RESOLVED = "Resolved"
    """A new resolution from the selected catalogs (or the active revision kept where the
    catalogs are gone and the input falls back to it)."""
    PINNED = "Pinned"
    """``spec.pinnedRevision`` (or the pin annotation) names the target."""
    CONFLICT = "Conflict"
    """A requested package is installed by another input: nothing was resolved."""
    PINNED_REVISION_MISSING = "PinnedRevisionMissing"
    NO_CATALOGS = "NoCatalogs"
    """No selected catalog serves content."""
    UNSATISFIABLE = "Unsatisfiable"
    RESOLUTION_FAILED = "ResolutionFailed"
    """The resolver could not run on what the catalogs say (an error, not an answer)."""
    INVALID_SELECTOR = "InvalidSelector"
    NOT_VERIFIED = "NotVerified"
    """A new selection names an image the verification policy refuses (mode ``enforce``): no
    revision was written (:mod:`pivoter.inputs.pinning`)."""

    @property
    def ok(self) -> bool:
        """Whether there is a target revision."""
        return self in (ResolutionState.RESOLVED, ResolutionState.PINNED)


@dataclass(frozen=True, slots=True)
class Resolved:
    """The ``Resolved`` fact of a pass: the state and the words. ``notes`` are further facts a
    person needs beside the message (selected catalogs that are not serving); the text of the
    condition is the message followed by the notes."""

    state: ResolutionState
    message: str
    notes: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The message and its notes, as conditions say them."""
        return "; ".join([self.message, *self.notes])


class ProgressState(enum.Enum):
    """Where the input's pivots stand. The values are the reasons of a Resolution's
    ``Progressing`` condition."""

    IDLE = "Idle"
    PIVOTING = "Pivoting"
    ROLLING_BACK = "RollingBack"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    PIVOT_FAILED = "PivotFailed"
    PAUSED = "Paused"
    AWAITING_APPROVAL = "AwaitingApproval"

    @property
    def moving(self) -> bool:
        """Whether a pivot (or its rollback) is changing the cluster now."""
        return self in (ProgressState.PIVOTING, ProgressState.ROLLING_BACK)

    @property
    def failed(self) -> bool:
        """Whether the last pivot failed (rolled back or not)."""
        return self in (ProgressState.PIVOT_FAILED, ProgressState.ROLLED_BACK)


@dataclass(frozen=True, slots=True)
class Progress:
    """The ``Progressing`` fact: the state, why the last pivot failed (when it did) and the
    words."""

    state: ProgressState
    message: str
    cause: FailureCause | None = None
    """Why the pivot failed (:attr:`ProgressState.failed` only; None for a record written by
    an older pivoter that did not store it)."""
    retry_waits: bool = False
    """The failed revision waits for its backoff, a new selection or a retry request."""


IDLE = Progress(ProgressState.IDLE, "no pivot in progress")

_TERMINAL: dict[Phase, tuple[ProgressState, str]] = {
    Phase.SUCCEEDED: (ProgressState.SUCCEEDED, words.PROGRESS_SUCCEEDED),
    Phase.ROLLED_BACK: (ProgressState.ROLLED_BACK, words.PROGRESS_ROLLED_BACK),
    Phase.FAILED: (ProgressState.PIVOT_FAILED, words.PROGRESS_FAILED),
}


def progress_of(pivot: PivotRecord) -> Progress:
    """The ``Progressing`` fact of an input whose last (or current) pivot is ``pivot``."""
    fields = {
        "revision": pivot.revision,
        "previous": pivot.previous,
        "why": pivot.message,
        "phase": pivot.phase.value,
    }
    if pivot.phase is Phase.ROLLING_BACK:
        message = words.PROGRESS_ROLLING_BACK.format(**fields)
        return Progress(ProgressState.ROLLING_BACK, message, pivot.cause)
    if not pivot.phase.terminal:
        return Progress(ProgressState.PIVOTING, words.PROGRESS_PIVOTING.format(**fields))
    state, template = _TERMINAL[pivot.phase]
    cause = pivot.cause if state is not ProgressState.SUCCEEDED else None
    return Progress(state, template.format(**fields), cause)


class FreshnessState(enum.Enum):
    """Whether the selection is the newest the catalogs offer (``UpToDate``)."""

    NEWEST = "Newest"
    NOT_NEWEST = "NotNewest"
    """Something newer is offered and not taken (held back by a gate, or the resolver's
    reason); :attr:`Freshness.reason` names which."""
    UNKNOWN = "Unknown"
    """Not compared: pinned, or the request did not resolve."""


@dataclass(frozen=True, slots=True)
class Freshness:
    """The ``UpToDate`` fact: the state, its reason (a gate such as ``Paused``, or the
    resolver's reason for the newest bundle not taken) and the words."""

    state: FreshnessState
    reason: str
    message: str
