"""Status conditions as Kubernetes defines them (``metav1.Condition``), set the way
apimachinery's ``meta.SetStatusCondition`` does: the transition time moves only when the status
changes, and every condition carries the generation it was computed from.

Every reconciler builds its status with :func:`set_condition` so that ``kubectl wait
--for=condition=...`` and humans read the same, current truth.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "Condition",
    "find",
    "is_true",
    "set_condition",
    "set_conditions",
]

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
MESSAGE_LIMIT = 32768  # the API's maxLength for condition messages
# Control characters other than newline and tab (C0, DEL, C1): catalog and bundle texts reach
# condition messages, and `kubectl describe` prints them raw to a terminal (escape sequences).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition a reconcile found, before it is written (with :func:`set_conditions`)."""

    type: str
    status: str
    reason: str
    message: str


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    """The condition of ``type_`` in ``conditions``, or None."""
    for condition in conditions or []:
        if condition.get("type") == type_:
            return condition
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    """Whether ``obj``'s status has condition ``type_`` with status True."""
    condition = find((obj.get("status") or {}).get("conditions"), type_)
    return condition is not None and condition.get("status") == TRUE


def set_condition(
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int,
) -> None:
    """Add or update condition ``type_`` in place; control characters in ``message`` become ?."""
    message = _CONTROL.sub("?", message)
    if len(message) > MESSAGE_LIMIT:
        suffix = " ... (truncated)"
        message = message[: MESSAGE_LIMIT - len(suffix)] + suffix
    current = find(conditions, type_)
    if current is None:
        conditions.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "observedGeneration": generation,
                "lastTransitionTime": _now(),
            }
        )
        return
    if current.get("status") != status:
        current["lastTransitionTime"] = _now()
    current.update(
        {"status": status, "reason": reason, "message": message, "observedGeneration": generation}
    )


def set_conditions(
    conditions: list[dict[str, Any]], found: Iterable[Condition], *, generation: int
) -> None:
    """:func:`set_condition` for each of ``found``, in order."""
    for c in found:
        set_condition(conditions, c.type, c.status, c.reason, c.message, generation=generation)
