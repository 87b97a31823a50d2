"""Explanations a person can act on, built from a minimal unsatisfiable subset (MUS).

The MUS is already minimal; this module only *groups* it for reading: the requirements of
several bundles of one package that fail for the same reason become one line listing the
versions, and a request's candidate list is shown as a count and a version span instead of a
list of identifiers. The full MUS stays available (``--explain`` prints both). Used by
:mod:`resolver.profiles.pivoter` and the CLI.

:func:`why_not_newer` reads a successful resolution's "why not newer" lines (``--explain``'s
``whyNotNewer``) and names the newest bundle not taken with its reason in one line, as the
daemon's ``UpToDate`` condition and ``pivoter plan`` show it.
"""

from __future__ import annotations

import unicodedata
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


# -- "why not newer": the newest bundle a successful resolution did not take -------------------

REASON_NEWEST = "Newest"
REASON_NOT_IN_CHANNEL = "NotInChannel"
REASON_OUTSIDE_RANGE = "OutsideVersionRange"
REASON_NO_UPGRADE_EDGE = "NoUpgradeEdge"
REASON_DEPRECATED = "Deprecated"
REASON_KUBE_VERSION = "ClusterVersion"
REASON_HELD = "HeldByOtherInput"
REASON_UNSATISFIABLE = "Unsatisfiable"
REASON_NOT_PREFERRED = "NotPreferred"

_FILTERS = (
    ("not in channel", REASON_NOT_IN_CHANNEL),
    ("version ", REASON_OUTSIDE_RANGE),
    ("no upgrade edge", REASON_NO_UPGRADE_EDGE),
)
_RULED_OUT = "ruled out by "
_WORSE = "possible, but worse for the objective "


@dataclass(frozen=True, slots=True)
class NotNewer:
    """The newest bundle of a requested package that a resolution did not take, and why."""

    package: str
    bundle: str
    version: str
    why: str
    """The resolver's reason, as ``--explain`` prints it (one line)."""
    reason: str
    """A CamelCase word for the kind of reason (``OutsideVersionRange``, ``Deprecated``, ...)."""

    def text(self) -> str:
        """One line for a person: the candidate, and why it was not taken."""
        return f"{self.package} {self.version} ({self.bundle}) is not taken: {self.why}"


def why_not_newer(package: str, lines: Sequence[str]) -> NotNewer | None:
    """The newest bundle not taken for ``package`` from the resolver's "why not newer" lines
    (``<bundle> <version>: <reason>``, newest first): the newest one in the requested channel,
    else the newest of another channel. None when nothing newer exists (or no line reads)."""
    parsed = [n for n in (_parse(package, line) for line in lines) if n is not None]
    in_channel = [n for n in parsed if n.reason != REASON_NOT_IN_CHANNEL]
    chosen = (in_channel or parsed)[:1]
    return chosen[0] if chosen else None


def _parse(package: str, line: str) -> NotNewer | None:
    head, sep, why = _printable(line).partition(": ")
    bundle, _, version = head.rpartition(" ")
    if not sep or not bundle or not version:
        return None
    return NotNewer(package, bundle, version, why, _reason(why))


def _printable(text: str) -> str:
    """``text`` on one line with no control characters: catalog texts (names, deprecation
    messages) reach terminals through ``pivoter plan`` and ``kubectl``, so an escape sequence
    is shown as ``?``, never interpreted."""
    return "".join(
        "?" if unicodedata.category(c).startswith("C") else c for c in " ".join(text.split())
    )


def _reason(why: str) -> str:
    for prefix, reason in _FILTERS:
        if why.startswith(prefix):
            return reason
    if why.startswith(_RULED_OUT):
        if "olm.deprecated" in why:
            return REASON_DEPRECATED
        if "minKubeVersion" in why:
            return REASON_KUBE_VERSION
        if " held at " in why:
            return REASON_HELD
        return REASON_UNSATISFIABLE
    if why.startswith(_WORSE):
        return REASON_DEPRECATED if "deprecated" in why else REASON_NOT_PREFERRED
    return REASON_NOT_PREFERRED
