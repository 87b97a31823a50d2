"""The one polling helper the tests use: wait until a condition holds, or fail saying what.

Dependency-free so pure tests can use it without importing the cluster harness;
``tests.cluster`` re-exports it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T | Literal[False] | None],
    *,
    timeout: float = 60.0,
    interval: float = 0.25,
    what: str = "",
    detail: Callable[[], object] | None = None,
) -> T:
    """Poll ``condition`` until it returns something truthy and return it; fail on timeout.

    ``detail``, called only on timeout, adds what was last seen (a status, a log tail) to the
    failure message.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            message = f"timed out after {timeout:.0f}s waiting for {what or condition}"
            if detail is not None:
                message += f"; {detail()}"
            raise AssertionError(message)
        time.sleep(interval)
