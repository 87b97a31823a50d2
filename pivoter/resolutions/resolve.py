"""One resolution of an input: its requests against its catalogs, with what is installed.

Returns a :class:`ResolveSet` or raises :class:`ResolveProblem` with a reason and a message a
person can act on (no catalog, unsatisfiable with the minimal explanation, a bad request).
Called by :mod:`pivoter.resolutions.engine`; the resolver itself is :mod:`resolver`.
"""

from __future__ import annotations

from collections.abc import Sequence

from resolver import profiles, resolveset
from resolver.resolveset import ResolveSet
from resolver.rules.inputs import (
    CatalogSource,
    Installed,
    PackageRequest,
    ResolutionError,
    ResolutionInput,
    Unsatisfiable,
)

__all__ = [
    "REASON_NO_CATALOGS",
    "REASON_RESOLUTION_FAILED",
    "REASON_UNSATISFIABLE",
    "ResolveProblem",
    "resolve",
]

REASON_NO_CATALOGS = "NoCatalogs"
REASON_UNSATISFIABLE = "Unsatisfiable"
REASON_RESOLUTION_FAILED = "ResolutionFailed"


class ResolveProblem(Exception):
    """Resolution gave no selection; ``reason`` is a condition reason, the message says why."""

    def __init__(self, reason: str, message: str, explanation: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.explanation = explanation


def resolve(
    catalogs: Sequence[tuple[CatalogSource, str]],
    requests: Sequence[PackageRequest],
    installed: Sequence[Installed],
    *,
    profile: str = profiles.DEFAULT,
) -> ResolveSet:
    """Resolve ``requests`` from ``catalogs`` (source, content digest) keeping ``installed``."""
    if not catalogs:
        raise ResolveProblem(
            REASON_NO_CATALOGS,
            "no catalog is serving content to this input: create a Catalog (or check that the "
            "selected Catalogs are Serving)",
        )
    inp = ResolutionInput(
        catalogs=[source for source, _ in catalogs],
        requests=list(requests),
        installed=list(installed),
    )
    try:
        result = profiles.get(profile)(inp)
    except Unsatisfiable as err:
        explanation = "\n".join(err.summary)
        raise ResolveProblem(
            REASON_UNSATISFIABLE,
            "the request cannot be met: " + "; ".join(err.summary),
            explanation,
        ) from None
    except ResolutionError as err:
        raise ResolveProblem(REASON_RESOLUTION_FAILED, str(err)) from None
    digest = resolveset.digest(
        [
            profile,
            sorted([source.name, source.priority, digest] for source, digest in catalogs),
            [[r.package, list(r.channels), r.version_range, r.upgrade_policy] for r in requests],
            sorted([i.package, i.name, i.version] for i in installed),
        ]
    )
    return resolveset.from_choices(result.choices, inputs_digest=digest, profile=profile)
