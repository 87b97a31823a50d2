"""What an input's status remembers between reconciles: revision numbers and the pivot record.

:class:`Record` is read from and written to the input's status (``activeRevision``,
``lastAttemptedRevision``, ``lastSuccessfulRevision`` and ``pivot``), the same fields for a
Resolution and a PlatformOperator. It is the only state the engine keeps: everything else is
re-read from the cluster on every reconcile. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.inputs.facts import ResolutionState
from pivoter.pivot import PivotRecord
from pivoter.pivot.state import now_iso, parse_time

__all__ = ["BACKOFF_CAP", "BACKOFF_FIRST", "Record"]

BACKOFF_FIRST = 30.0
BACKOFF_CAP = 1800.0


@dataclass(slots=True)
class Record:
    """The input's remembered state (see the module docstring)."""

    active: int | None = None
    last_attempted: int | None = None
    last_successful: int | None = None
    pivot: PivotRecord | None = None
    failed_revision: int | None = None
    failures: int = 0
    failed_at: float | None = None
    retry_token: str = ""
    requested: tuple[str, ...] = ()
    """The packages requested when the last pivot started: one of them that is no longer
    requested is uninstalled (unless something else still requires it)."""
    recreating: tuple[str, ...] = ()
    """The packages whose child was deleted by hand, when the last pivot started to re-create
    them: the status names them until they are back."""
    resolution: ResolutionState | None = None
    """How the last pass that resolved ended (e.g. unsatisfiable: another input's change may
    unblock it, :mod:`pivoter.inputs.dependents`), the same for every input kind whatever
    its conditions say."""

    @property
    def highest(self) -> int:
        """The highest revision number recorded (new revisions are numbered after it)."""
        return max(n or 0 for n in (self.active, self.last_attempted, self.last_successful))

    @property
    def pivoting(self) -> bool:
        """Whether a pivot is in progress."""
        return self.pivot is not None and not self.pivot.phase.terminal

    def retry_at(self) -> float | None:
        """When a failed revision may be tried again on its own (exponential backoff)."""
        if self.failed_at is None or self.failures < 1:
            return None
        delay: float = min(BACKOFF_FIRST * 2.0 ** (self.failures - 1), BACKOFF_CAP)
        return self.failed_at + delay

    def to_status(self) -> dict[str, Any]:
        """The status fields of this record, as a merge patch (None removes a field)."""
        pivot: dict[str, Any] = self.pivot.to_dict() if self.pivot else {}
        pivot.update(
            {
                "failedRevision": self.failed_revision,
                "failures": self.failures or None,
                "failedAt": now_iso(self.failed_at) if self.failed_at else None,
                "retryToken": self.retry_token or None,
                "requested": list(self.requested) or None,
                "recreating": list(self.recreating) or None,
                "resolution": self.resolution.value if self.resolution else None,
            }
        )
        return {
            "activeRevision": self.active,
            "lastAttemptedRevision": self.last_attempted,
            "lastSuccessfulRevision": self.last_successful,
            "pivot": pivot,
        }

    @staticmethod
    def resolution_in(status: Mapping[str, Any] | None) -> ResolutionState | None:
        """:attr:`resolution` of the record kept in ``status``, read alone (a watch mapper asks
        it of every input on every child event: the whole record is not needed)."""
        pivot = (status or {}).get("pivot")
        return _state(pivot.get("resolution")) if isinstance(pivot, Mapping) else None

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> Record:
        """The record kept in ``status``."""
        status = status or {}
        pivot = status.get("pivot")
        if not isinstance(pivot, Mapping):
            pivot = {}  # none, or edited by hand into something else: no record

        def number(value: Any) -> int | None:
            try:
                return int(value) if value else None
            except (TypeError, ValueError):
                return None

        return cls(
            active=number(status.get("activeRevision")),
            last_attempted=number(status.get("lastAttemptedRevision")),
            last_successful=number(status.get("lastSuccessfulRevision")),
            pivot=PivotRecord.from_dict(pivot),
            failed_revision=number(pivot.get("failedRevision")),
            failures=number(pivot.get("failures")) or 0,
            failed_at=parse_time(pivot.get("failedAt")),
            retry_token=str(pivot.get("retryToken") or ""),
            requested=_strings(pivot.get("requested")),
            recreating=_strings(pivot.get("recreating")),
            resolution=_state(pivot.get("resolution")),
        )


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings kept in status (anything else, e.g. edited by hand, reads as none)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str | int))


def _state(value: Any) -> ResolutionState | None:
    try:
        return ResolutionState(value) if isinstance(value, str) else None
    except ValueError:
        return None
