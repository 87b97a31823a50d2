"""Label selectors as the API server reads them, matched locally: what lets a LIST be answered
from an informer's cache (:mod:`pivoter.runtime.cachedreads`).

The string form of ``labelSelector`` (k8s.io/apimachinery ``labels.Parse``): requirements joined
by commas, each ``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in
(a,b)`` or ``key notin (a,b)``. A selector this parser cannot read raises :class:`ValueError`;
callers then ask the API server, which says what is wrong with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Requirement", "Selector", "parse"]

_SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement: ``operator`` is ``in``, ``notin``, ``exists`` or ``!``."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` meet this requirement (as the API server decides it)."""
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        if self.operator == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values

    def implies(self, other: Requirement) -> bool:
        """Whether every label set meeting this requirement meets ``other``."""
        if self.key != other.key:
            return False
        if other.operator == "exists":
            return self.operator == "exists" or (self.operator == "in" and bool(self.values))
        if other.operator == "!":
            return self.operator == "!"
        if other.operator == "in":
            return self.operator == "in" and self.values <= other.values
        # notin: the label is absent, or its value is none of other's
        if self.operator == "!":
            return True
        if self.operator == "in":
            return not self.values & other.values
        return self.operator == "notin" and other.values <= self.values


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label selector: every requirement must hold (the empty one selects all)."""

    requirements: frozenset[Requirement]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected."""
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    def implies(self, other: Selector) -> bool:
        """Whether every object this selector selects is also selected by ``other``: each of
        ``other``'s requirements follows from one of this selector's (``a=x`` implies ``a``,
        ``a in (x,y)`` and ``a!=z``; ``!a`` implies ``a!=z``)."""
        return all(any(mine.implies(r) for mine in self.requirements) for r in other.requirements)


def _split(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _requirement(text: str) -> Requirement:
    if match := _SET.match(text):
        values = frozenset(v.strip() for v in match.group(3).split(",") if v.strip())
        return Requirement(match.group(1), match.group(2), values)
    if match := _EQUALITY.match(text):
        operator = "notin" if match.group(2) == "!=" else "in"
        return Requirement(match.group(1), operator, frozenset({match.group(3)}))
    if match := _EXISTS.match(text):
        return Requirement(match.group(2), "!" if match.group(1) else "exists")
    raise ValueError(f"cannot read the label selector requirement {text.strip()!r}")


def parse(text: str) -> Selector:
    """Parse a ``labelSelector`` string; raises :class:`ValueError` when it cannot."""
    if not text.strip():
        return Selector(frozenset())
    return Selector(frozenset(_requirement(part) for part in _split(text)))
