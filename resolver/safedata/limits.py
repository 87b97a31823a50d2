"""Limits and errors shared by the safe YAML and JSON loaders (see :mod:`resolver.safedata`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_LIMITS",
    "Limits",
    "Located",
    "Refused",
    "SafeDataError",
    "TooBig",
    "TooDeep",
    "check_size",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on one text; every caller may pass its own."""

    max_bytes: int = 32 << 20
    """Length of the text (bytes, or characters for ``str``)."""
    max_depth: int = 200
    """Nesting of collections (a scalar at the top is depth 0, ``[1]`` is depth 1)."""
    max_nodes: int = 2_000_000
    """Nodes of one YAML document with aliases expanded (the guard against alias bombs)."""
    max_documents: int = 10_000
    """Documents in one YAML stream."""


DEFAULT_LIMITS = Limits()


class SafeDataError(ValueError):
    """Untrusted YAML/JSON that was refused; ``str()`` is one line: ``[where: ][line N: ]reason``.

    ``line`` is 1-based (0 when unknown), relative to the start of the text given. ``limit`` is
    true when a limit was hit (size, nesting): reading the text another way would not help.
    """

    def __init__(self, reason: str, line: int = 0, where: str = "", *, limit: bool = False) -> None:
        self.reason = " ".join(reason.split())
        self.line = line
        self.where = where
        self.limit = limit
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.where] if self.where else []
        if self.line:
            parts.append(f"line {self.line}")
        parts.append(self.reason)
        return ": ".join(parts)


class Refused(ValueError):
    """Raised inside the loaders for a value they refuse (the message is the reason); callers see
    :class:`SafeDataError`."""


class Located(Exception):
    """A refusal with the line of the event it happened at (``limit``: see SafeDataError)."""

    def __init__(self, reason: str, line: int, *, limit: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.limit = limit


class TooBig(Refused):
    """A limit hit by the whole document (reported at its first line)."""


class TooDeep(Refused):
    """Nesting past the limit."""


def check_size(data: str | bytes, limits: Limits, where: str) -> None:
    """Refuse ``data`` longer than ``limits.max_bytes`` before any parser sees it."""
    if len(data) > limits.max_bytes:
        unit = "bytes" if isinstance(data, bytes) else "characters"
        reason = f"{len(data)} {unit} exceeds the limit of {limits.max_bytes}"
        raise SafeDataError(reason, 0, where, limit=True)
