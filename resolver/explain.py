"""Explanations a person can act on, built from a minimal unsatisfiable subset (MUS).

The MUS is already minimal; this module only *groups* it for reading: the requirements of
several bundles of one package that fail for the same reason become one line listing the
versions, and a request's candidate list is shown as a count and a version span instead of a
list of identifiers. The full MUS stays available (``--explain`` prints both). Used by
:mod:`resolver.profiles.pivoter` and the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from resolver.sat import AppliedConstraint, Dependency
from resolver.sat.constraints import Constraint


@dataclass(frozen=True, slots=True)
class Requirement:
    """What one bundle's dependency constraint means: who needs what, and is it available."""

    package: str
    version: str
    needs: str
    available: bool


@dataclass(frozen=True, slots=True)
class RequestFact:
    """What one request's candidate constraint means."""

    what: str
    versions: tuple[str, ...]


Fact = Requirement | RequestFact


def summarize(mus: Sequence[AppliedConstraint], facts: Mapping[Constraint, Fact]) -> list[str]:
    """Return the MUS as grouped lines in domain words (see module doc)."""
    lines: list[str] = []
    groups: dict[tuple[str, str, bool], list[str]] = {}
    order: list[tuple[str, str, bool]] = []
    consumed: set[int] = set()
    for applied in mus:
        fact = facts.get(applied.constraint)
        if isinstance(fact, Requirement):
            key = (fact.package, fact.needs, fact.available)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(fact.version)
            consumed.add(applied.index)
    for applied in mus:
        if applied.index in consumed:
            continue
        fact = facts.get(applied.constraint)
        if isinstance(fact, RequestFact) and isinstance(applied.constraint, Dependency):
            n = len(fact.versions)
            if n == 0:
                lines.append(str(applied))
            else:
                span = fact.versions[0] if n == 1 else f"{fact.versions[-1]} to {fact.versions[0]}"
                noun = "bundle" if n == 1 else "bundles"
                lines.append(f"{fact.what}: {n} candidate {noun} ({span}), none installable")
        elif str(applied) not in lines:
            lines.append(str(applied))
    for package, needs, available in order:
        versions = groups[(package, needs, available)]
        verb = "requires" if len(versions) == 1 else "require"
        tail = "" if available else ", which no bundle in any catalog provides"
        lines.append(f"{package} {', '.join(versions)} {verb} {needs}{tail}")
    # "package P is requested" says nothing the line "package P is requested: ..." does not.
    return [line for line in lines if not any(o.startswith(line + ":") for o in lines)]
