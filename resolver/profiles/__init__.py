"""Resolution profiles: one engine, several semantics.

``olm-v0``, ``deppy``, ``olmv1-deppy`` and ``olmv1-filter`` reproduce the engines of the shared
conformance cases; ``pivoter`` (the default) implements ``docs/resolution.md``. Callers (the CLI,
the conformance runner, the daemon) pick a profile by name with :func:`get`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from resolver.rules.inputs import Resolution, ResolutionInput
from resolver.sat import Engine, NotSatisfiable, Variable

Profile = Callable[[ResolutionInput], Resolution]

DEFAULT = "pivoter"
"""The profile used when none is named."""

SEPARATORS = {"olm-v0": ", ", "deppy": "\n", "olmv1-deppy": "\n"}
"""How each engine joins the constraints of an explanation (OLM: commas; deppy: lines)."""


def get(name: str) -> Profile:
    """Return the resolver of profile ``name``; raise KeyError for an unknown profile."""
    if name == "olm-v0":
        from resolver.profiles import olm_v0

        return olm_v0.resolve
    if name == "olmv1-deppy":
        from resolver.profiles import olmv1_deppy

        return olmv1_deppy.resolve
    if name == "olmv1-filter":
        from resolver.profiles import olmv1_filter

        return olmv1_filter.resolve
    if name in ("pivoter", "default"):
        from resolver.profiles import pivoter

        return pivoter.resolve
    raise KeyError(f"unknown profile {name!r} (known: {', '.join(NAMES)})")


NAMES = ("pivoter", "olm-v0", "olmv1-deppy", "olmv1-filter")
"""Profiles selectable for catalog resolution (``deppy`` exists at solver level only)."""


def solve_variables(variables: Sequence[Variable]) -> list[str]:
    """Solve a solver-level problem the way OLM v0 and deppy do; return the selected ids.

    Raises :class:`~resolver.sat.NotSatisfiable` with a minimal explanation.
    """
    with Engine(variables) as engine:
        engine.check()
        fixed = engine.minimize_extras(engine.preference_search())
        return engine.canonical_model(fixed)


__all__ = ["DEFAULT", "NAMES", "SEPARATORS", "NotSatisfiable", "Profile", "get", "solve_variables"]
