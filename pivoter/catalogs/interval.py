"""Poll intervals: Go-style durations as ``spec.pollInterval`` holds them, and retry delays.

Used by the catalog reconcilers to decide when to look again.
"""

from __future__ import annotations

import re

__all__ = ["MIN_INTERVAL", "parse_duration", "retry_delay"]

MIN_INTERVAL = 1.0
"""Shortest poll interval honoured, in seconds (a typo like ``1ms`` must not hammer a server)."""

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
"""A number and its unit. A number starts where no digit or dot is before it: unanchored, the
search tried every digit of a long number as a start (quadratic in its length); a valid duration
is whole parts one after the other, which always start after a unit or at the start."""


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``10m``, ``1h30m``, ``2.5s``, ``500ms``; raises ValueError."""
    value = text.strip()
    parts: list[tuple[str, str]] = _PART.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"{text!r} is not a duration like 30s, 10m or 1h30m")
    seconds = 0.0
    for number, unit in parts:
        seconds += float(number) * _UNITS[unit]
    return seconds


def retry_delay(failures: int, interval: float, *, first: float = 5.0) -> float:
    """How long to wait after ``failures`` consecutive failed polls: ``first`` doubling, never
    longer than the poll interval (a failing source is retried sooner than a healthy one)."""
    if failures < 1:
        return interval
    backoff: float = first * float(2 ** min(failures - 1, 20))
    return min(interval, backoff)
