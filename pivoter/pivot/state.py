"""The persisted state of a grouped pivot: its phase and what it needs to resume or revert.

A :class:`PivotRecord` lives in the input's ``status.pivot`` and is written *before* the action
of each phase runs, so a daemon killed at any transition finds, on restart, the phase it was in,
the revision it was going to and the revision it would revert to, and simply runs that phase
again (every phase's action is idempotent). The phases are described in docs/pivot.md.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["FailureCause", "Phase", "PivotHead", "PivotRecord", "now_iso", "parse_time"]


class Phase(enum.Enum):
    """The named states of the pivot state machine (docs/pivot.md)."""

    PREPARING = "Preparing"
    APPLYING = "Applying"
    WAITING = "Waiting"
    PRUNING = "Pruning"
    ROLLING_BACK = "RollingBack"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    FAILED = "Failed"

    @property
    def terminal(self) -> bool:
        """Whether the pivot is over (nothing runs until the next pivot starts)."""
        return self in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)

    @property
    def succeeded(self) -> bool:
        """Whether the pivot ended with its target active."""
        return self is Phase.SUCCEEDED


class FailureCause(enum.Enum):
    """Why a pivot failed, as a fact the input kinds' status modules decide from (the message
    says it in words for people; nothing reads the words back). Stored in ``status.pivot.cause``.
    """

    BUNDLE_FAILED = "BundleFailed"
    """A bundle could not be installed: its dry run, its child's install or its health."""
    INVALID_CONFIGURATION = "InvalidConfiguration"
    """A bundle's format refused the configuration it was given (``spec.config``)."""
    DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    """The progress deadline passed before every bundle was installed and healthy."""
    UNINSTALLABLE = "Uninstallable"
    """The catalog does not say how to install a bundle (e.g. no image)."""
    REVISION_LOST = "RevisionLost"
    """A ResolveSet revision the pivot needs was deleted or modified by hand."""

    @classmethod
    def read(cls, value: Any) -> FailureCause | None:
        """The cause stored in a record, or None (no cause, or one this version does not know:
        a record written by an older pivoter)."""
        try:
            return cls(str(value)) if value else None
        except ValueError:
            return None


def now_iso(now: float) -> str:
    """``now`` (epoch seconds) as an RFC 3339 UTC timestamp."""
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp written by :func:`now_iso` (None if absent)."""
    if not text:
        return None
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class PivotHead:
    """The phase and revisions of a stored pivot record, read without the rest: what another
    input's pass needs of every input's record (:mod:`pivoter.inputs.targets`)."""

    phase: Phase
    revision: int
    previous: int | None

    @classmethod
    def read(cls, data: Mapping[str, Any] | None) -> PivotHead | None:
        """As :meth:`PivotRecord.from_dict`: None when there is no record or it is garbled
        (anything but a mapping included: status is only as trustworthy as who can write it)."""
        if not isinstance(data, Mapping) or not data.get("phase") or not data.get("revision"):
            return None
        try:
            phase = Phase(str(data["phase"]))
            revision = int(data["revision"])
            previous = data.get("previousRevision")
            return cls(phase, revision, int(previous) if previous else None)
        except (ValueError, TypeError):
            return None


@dataclass(frozen=True, slots=True)
class PivotRecord:
    """One pivot: from ``previous`` (the last successful revision, if any) to ``revision``."""

    phase: Phase
    revision: int
    previous: int | None
    started: float
    """When the current phase's deadline started (the pivot, or the rollback)."""
    failing_since: float | None = None
    failed_bundle: str = ""
    message: str = ""
    cause: FailureCause | None = None
    """Why the pivot failed (None while it has not; kept through a rollback and its failure)."""
    waves: tuple[tuple[str, ...], ...] = ()
    """The packages in apply order (:mod:`pivoter.pivot.order`), set when Preparing ends."""
    applied_waves: int = 0
    """How many of :attr:`waves` have been applied."""

    def to(self, phase: Phase, **changes: Any) -> PivotRecord:
        """The record in ``phase`` (with other fields changed as given)."""
        return replace(self, phase=phase, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The record as stored in ``status.pivot``."""
        data: dict[str, Any] = {
            "phase": self.phase.value,
            "revision": self.revision,
            "previousRevision": self.previous,
            "startedAt": now_iso(self.started),
            "failingSince": now_iso(self.failing_since) if self.failing_since else None,
            "failedBundle": self.failed_bundle or None,
            "message": self.message or None,
            "cause": self.cause.value if self.cause else None,
            "waves": [list(wave) for wave in self.waves] or None,
            "appliedWaves": self.applied_waves or None,
        }
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> PivotRecord | None:
        """The record stored in ``status.pivot``, or None when there is none (or it is garbled:
        a record pivoter cannot read is treated as no pivot in progress)."""
        head = PivotHead.read(data)
        if head is None or data is None:
            return None
        return cls(
            phase=head.phase,
            revision=head.revision,
            previous=head.previous,
            started=parse_time(data.get("startedAt")) or 0.0,
            failing_since=parse_time(data.get("failingSince")),
            failed_bundle=str(data.get("failedBundle") or ""),
            message=str(data.get("message") or ""),
            cause=FailureCause.read(data.get("cause")),
            waves=_waves(data.get("waves")),
            applied_waves=_count(data.get("appliedWaves")),
        )


def _waves(value: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list):
        return ()
    return tuple(tuple(str(p) for p in wave) for wave in value if isinstance(wave, list))


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
