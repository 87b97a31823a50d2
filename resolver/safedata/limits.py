"""Limits and errors shared by the safe YAML and JSON loaders (see :mod:`resolver.safedata`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_EXPANDED_BYTES",
    "Limits",
    "Located",
    "Refused",
    "SafeDataError",
    "TooBig",
    "TooDeep",
    "check_size",
]


MAX_EXPANDED_BYTES = 256 << 20
"""The most any caller may let a text become (:attr:`Limits.max_expanded_bytes`): the expansion
budget can be set lower or higher than the default, never switched off."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on one text; every caller may pass its own (the expansion budget only within
    :data:`MAX_EXPANDED_BYTES`: constructing Limits without one raises ValueError)."""

    max_bytes: int = 32 << 20
    """Length of the text (bytes, or characters for ``str``)."""
    max_depth: int = 200
    """Nesting of collections (a scalar at the top is depth 0, ``[1]`` is depth 1)."""
    max_nodes: int = 2_000_000
    """Nodes of one YAML document with aliases expanded (the guard against alias bombs by count);
    also the most nodes aliases may copy into all the documents of one text together."""
    max_documents: int = 10_000
    """Documents in one YAML stream."""
    max_expanded_bytes: int = 32 << 20
    """What all the documents of one YAML text may become, in bytes of JSON (each scalar's and
    key's characters plus 2, each collection 2), aliases expanded, counted as it is built: the
    guard against alias bombs by size (one anchored 1 MiB string aliased 5,000 times is 5,001
    nodes and 5 GB written out). A text may always become twice its own length (what JSON's
    quotes and brackets add to YAML without aliases), so the limit only ever bites on aliases.
    JSON has no aliases: a JSON text becomes its own size, capped by ``max_bytes``."""

    def __post_init__(self) -> None:
        if not 0 < self.max_expanded_bytes <= MAX_EXPANDED_BYTES:
            raise ValueError(
                f"max_expanded_bytes must be within 1..{MAX_EXPANDED_BYTES} "
                f"(got {self.max_expanded_bytes}): the expansion budget cannot be switched off"
            )


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
