"""One resolution of an input: its requests against its catalogs, with what is installed and
what the other inputs hold.

Returns a :class:`Selection` (the input's own ResolveSet, the held bundles it depends on and,
per requested package, the newest bundle not taken and why) or
raises :class:`ResolveProblem` with its state and a message a
person can act on (no catalog, unsatisfiable with the minimal explanation, a bad request).
Called by :mod:`pivoter.inputs.engine`; the resolver itself is :mod:`resolver`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pivoter.inputs.facts import ResolutionState
from resolver import profiles, resolveset
from resolver.catalog.model import GVK, PROP_GVK
from resolver.explain import NotNewer, why_not_newer
from resolver.resolveset import ResolveSet
from resolver.rules.inputs import (
    CatalogInput,
    Choice,
    Held,
    Installed,
    PackageRequest,
    ResolutionError,
    ResolutionInput,
    SharedChoice,
    Unsatisfiable,
)
from resolver.rules.reads import Reads

__all__ = [
    "ResolveProblem",
    "Selection",
    "resolve",
]


class ResolveProblem(Exception):
    """Resolution gave no selection; ``state`` says why as a fact, the message in words."""

    def __init__(self, state: ResolutionState, message: str, explanation: str = "") -> None:
        super().__init__(message)
        self.state = state
        self.explanation = explanation


@dataclass(frozen=True, slots=True)
class Selection:
    """A resolution's answer: the input's own bundles, and the held bundles it depends on."""

    document: ResolveSet
    shared: tuple[SharedChoice, ...] = ()
    not_newer: tuple[NotNewer, ...] = ()
    """Per requested package that has newer bundles: the newest one not taken, and why."""


def resolve(
    catalogs: Sequence[tuple[CatalogInput, str]],
    requests: Sequence[PackageRequest],
    installed: Sequence[Installed],
    *,
    held: Sequence[Held] = (),
    profile: str = profiles.DEFAULT,
    reads: Reads | None = None,
) -> Selection:
    """Resolve ``requests`` from ``catalogs`` (source, content digest) keeping ``installed``,
    with ``held`` (what other inputs selected) as fixed choices; ``reads``, when given, is
    filled with what the resolution read from the catalogs (everything, for a profile that
    does not say)."""
    if reads is not None and profile != profiles.DEFAULT:
        reads.everything = True
    if not catalogs:
        raise ResolveProblem(
            ResolutionState.NO_CATALOGS,
            "no catalog is serving content to this input: create a Catalog (or check that the "
            "selected Catalogs are Serving)",
        )
    inp = ResolutionInput(
        catalogs=[source for source, _ in catalogs],
        requests=list(requests),
        installed=list(installed),
        held=list(held),
        # "Why not newer" for the status: the newest candidates of each requested package
        # (one beyond those another channel rules out), as ``pivoter resolve --explain`` says.
        options={"explain": True, "why_not_newer_limit": 1},
        reads=reads,
    )
    try:
        result = profiles.get(profile)(inp)
    except Unsatisfiable as err:
        explanation = "\n".join(err.summary)
        raise ResolveProblem(
            ResolutionState.UNSATISFIABLE,
            "the request cannot be met: " + "; ".join(err.summary),
            explanation,
        ) from None
    except ResolutionError as err:
        raise ResolveProblem(ResolutionState.RESOLUTION_FAILED, str(err)) from None
    if profile != profiles.DEFAULT:
        # The OLM profiles know nothing of other inputs: uniqueness across inputs is checked here.
        _check_held(result.choices, held)
    digest = resolveset.digest(
        [
            profile,
            sorted([source.name, source.priority, digest] for source, digest in catalogs),
            [[r.package, list(r.channels), r.version_range, r.upgrade_policy] for r in requests],
            sorted([i.package, i.name, i.version] for i in installed),
            sorted([h.package, h.name, h.version] for h in held),
        ]
    )
    document = resolveset.from_choices(result.choices, inputs_digest=digest, profile=profile)
    not_newer = (why_not_newer(r.package, result.why_not.get(r.package) or ()) for r in requests)
    return Selection(document, tuple(result.shared), tuple(n for n in not_newer if n is not None))


def _check_held(choices: Sequence[Choice], held: Sequence[Held]) -> None:
    """Package and API uniqueness across the inputs of the cluster for a profile that does not
    honour held bundles: no chosen package is held by another input, and no chosen bundle
    provides an API a held bundle of another package provides (the same rule, and the same
    words, as the ``pivoter`` profile's hard constraints 4, 5 and 8)."""
    for choice in choices:
        bundle = choice.bundle
        where = (
            f"bundle {bundle.name} (package {choice.package} {bundle.version}, "
            f"catalog {choice.catalog})"
        )
        for h in held:
            if h.package == choice.package:
                raise ResolveProblem(
                    ResolutionState.UNSATISFIABLE,
                    f"the request cannot be met: {where} cannot be selected: {h.text()}",
                    f"{where} cannot be selected: {h.text()}",
                )
            provided = {str(_gvk_of(p.value)) for p in h.properties if p.type == PROP_GVK} & {
                str(g) for g in bundle.provided_apis
            }
            if provided:
                api = sorted(provided)[0]
                text = (
                    f"{where} cannot be selected: it provides API {api}, which package "
                    f"{h.package} ({h.origin()}) provides: only one package may provide an API"
                )
                raise ResolveProblem(
                    ResolutionState.UNSATISFIABLE, f"the request cannot be met: {text}", text
                )


def _gvk_of(value: object) -> GVK:
    data = value if isinstance(value, dict) else {}
    return GVK(str(data.get("group", "")), str(data.get("version", "")), str(data.get("kind", "")))
