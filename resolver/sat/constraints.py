"""The generic constraint language of the solver: variables and the constraints applied to them.

A problem is an ordered list of :class:`Variable`; each carries constraints about itself
(its *subject*). The kinds are the ones OLM v0's and deppy's solvers have (mandatory, prohibited,
dependency with ordered candidates, conflict, at-most-n) plus deppy's unconditional ``or``.
Every constraint may carry a ``reason``: the domain words shown in explanations instead of the
generic text. Built by :mod:`resolver.rules` and the conformance runner; compiled by
:mod:`resolver.sat.engine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Mandatory:
    """The subject must be selected."""

    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        return self.reason or f"{subject} is mandatory"


@dataclass(frozen=True, slots=True)
class Prohibited:
    """The subject must not be selected."""

    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        return self.reason or f"{subject} is prohibited"


@dataclass(frozen=True, slots=True)
class Dependency:
    """If the subject is selected, one of ``ids`` must be; earlier ids are preferred."""

    ids: tuple[str, ...]
    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        if self.reason:
            return self.reason
        if not self.ids:
            return f"{subject} has a dependency without any candidates to satisfy it"
        return f"{subject} requires at least one of {', '.join(self.ids)}"


@dataclass(frozen=True, slots=True)
class ConflictsWith:
    """The subject and ``id`` are not both selected."""

    id: str
    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        return self.reason or f"{subject} conflicts with {self.id}"


@dataclass(frozen=True, slots=True)
class AtMost:
    """At most ``n`` of ``ids`` are selected (the subject is only a label)."""

    n: int
    ids: tuple[str, ...]
    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        return self.reason or f"{subject} permits at most {self.n} of {', '.join(self.ids)}"


@dataclass(frozen=True, slots=True)
class Or:
    """deppy's ``Or``: the unconditional clause ``(subject or id)``, either side maybe negated."""

    id: str
    negate_subject: bool = False
    negate_operand: bool = False
    reason: str = ""

    def describe(self, subject: str) -> str:
        """Return the text of this constraint applied to ``subject``."""
        if self.reason:
            return self.reason
        left = f"not {subject}" if self.negate_subject else subject
        right = f"not {self.id}" if self.negate_operand else self.id
        return f"{left} or {right}"


Constraint = Mandatory | Prohibited | Dependency | ConflictsWith | AtMost | Or
"""Any constraint kind."""


@dataclass(frozen=True, slots=True)
class Variable:
    """A boolean decision (a bundle, a request, a uniqueness group) and its constraints."""

    id: str
    constraints: tuple[Constraint, ...] = ()
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.constraints, tuple):
            object.__setattr__(self, "constraints", tuple(self.constraints))


@dataclass(frozen=True, slots=True)
class AppliedConstraint:
    """One constraint of one variable: the unit an explanation is made of."""

    variable: Variable
    constraint: Constraint
    index: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return self.constraint.describe(self.variable.id)


def order_of(constraint: Constraint) -> Sequence[str]:
    """The candidates a constraint prefers, most preferred first (dependencies only)."""
    return constraint.ids if isinstance(constraint, Dependency) else ()
