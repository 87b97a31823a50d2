"""A Resolution's status from an engine :class:`~pivoter.inputs.engine.Outcome`.

Conditions ``Resolved``, ``Conflict``, ``Progressing``, ``Installed``, ``Healthy``, the summary
``Ready`` and ``UpToDate`` (why not newer), each with the generation it was computed for; the
current selection, the explanation when unsatisfiable, the pending plan and the revision record.
Also the child summaries and ``UpToDate`` the PlatformOperator status reuses. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN, Condition, find, set_conditions
from pivoter.inputs.facts import Freshness, FreshnessState, ProgressState, ResolutionState
from pivoter.inputs.outcome import Outcome
from pivoter.pivot import REASON_CHILD_MISSING, ChildReport, ChildState, Phase

__all__ = [
    "REASON_CONFLICT",
    "REASON_CONFLICT_READY",
    "REASON_NOT_RESOLVED",
    "REASON_NO_CONFLICT",
    "REASON_READY",
    "REASON_REPAIRED",
    "REASON_RESOLVING",
    "TYPE_CONFLICT",
    "freshness_condition",
    "healthy",
    "installed",
    "resolution_status",
    "shared_dependencies",
    "up_to_date",
]

TYPE_CONFLICT = "Conflict"
REASON_CONFLICT = "PackageConflict"
REASON_NO_CONFLICT = "NoConflict"
REASON_RESOLVING = "Resolving"
REASON_READY = "Ready"
REASON_REPAIRED = "Repaired"
REASON_NOT_RESOLVED = "NotResolved"
REASON_CONFLICT_READY = "Conflict"
"""``Ready``'s reason while a requested package is installed by another input."""

RESOLVED_REASONS: Mapping[ResolutionState, str] = {state: state.value for state in ResolutionState}
"""The ``Resolved`` condition's reason for each :class:`ResolutionState` (the Resolution's own
words: the names of the states)."""
PROGRESSING_REASONS: Mapping[ProgressState, str] = {state: state.value for state in ProgressState}
"""The ``Progressing`` condition's reason for each :class:`ProgressState`."""
READY_PROGRESS = frozenset({ProgressState.IDLE, ProgressState.SUCCEEDED})
"""The progress states in which an input can be Ready."""
FRESHNESS_STATUS: Mapping[FreshnessState, str] = {
    FreshnessState.NEWEST: TRUE,
    FreshnessState.NOT_NEWEST: FALSE,
    FreshnessState.UNKNOWN: UNKNOWN,
}


def installed(out: Outcome) -> Condition:
    """``Installed`` from the children of the revision in view."""
    reports = out.reports
    revision = out.record.active
    if not reports:
        pivot = out.record.pivot
        if revision is None and pivot is not None and pivot.phase is Phase.FAILED:
            return _installed(
                FALSE, "InstallFailed", f"revision {pivot.revision} failed: {pivot.message}"
            )
        if revision is None:
            return _installed(FALSE, "NotInstalled", "nothing is installed yet")
        return _installed(UNKNOWN, "InstallPending", f"revision {revision} is being installed")
    failed = [r for r in reports if r.state is ChildState.FAILED]
    if failed:
        return _installed(FALSE, "InstallFailed", _join(failed))
    missing = [r for r in reports if r.state is ChildState.MISSING]
    if missing:
        return _installed(FALSE, "BundleDeploymentMissing", _join(missing))
    if all(r.state in (ChildState.READY, ChildState.UNHEALTHY) for r in reports):
        return _installed(
            TRUE,
            "Installed",
            f"{len(reports)} bundles installed" + (f" (revision {revision})" if revision else ""),
        )
    return _installed(
        UNKNOWN, "InstallPending", _join([r for r in reports if r.state is not ChildState.READY])
    )


def _installed(status: str, reason: str, message: str) -> Condition:
    return Condition(api.TYPE_INSTALLED, status, reason, message)


def healthy(out: Outcome) -> Condition:
    """``Healthy`` from the children of the revision in view. A child deleted by hand is named
    (``ChildMissing``), whatever the other children's state."""
    reports = out.reports
    if not reports:
        if out.record.active is None:
            return _healthy(UNKNOWN, "NotInstalled", "nothing is installed yet")
        return _healthy(
            UNKNOWN,
            "HealthUnknown",
            f"the children of revision {out.record.active} were not read",
        )
    if all(r.state is ChildState.READY for r in reports):
        return _healthy(TRUE, "Healthy", f"all {len(reports)} BundleDeployments are healthy")
    missing = [r for r in reports if r.state is ChildState.MISSING]
    unhealthy = [r for r in reports if r.state is ChildState.UNHEALTHY]
    if missing:
        return _healthy(FALSE, REASON_CHILD_MISSING, _join(missing + unhealthy))
    if unhealthy:
        return _healthy(FALSE, "Unhealthy", _join(unhealthy))
    return _healthy(
        UNKNOWN, "HealthUnknown", _join([r for r in reports if r.state is not ChildState.READY])
    )


def _healthy(status: str, reason: str, message: str) -> Condition:
    return Condition(api.TYPE_HEALTHY, status, reason, message)


def shared_dependencies(out: Outcome) -> dict[str, Any]:
    """``status.sharedDependencies`` as a merge patch: nothing when this pass did not resolve
    (the field keeps its value), None (removed) when no dependency is shared."""
    if out.shared is None:
        return {}
    listed = [
        {
            "package": s.package,
            "version": s.version,
            "bundle": s.bundle,
            "providedBy": s.provided_by,
            "requiredBy": list(s.required_by),
        }
        for s in out.shared
    ]
    return {"sharedDependencies": listed or None}


def freshness_condition(freshness: Freshness) -> Condition:
    """``UpToDate`` from the freshness fact (its reason is the gate's or the resolver's)."""
    return Condition(
        api.TYPE_UP_TO_DATE, FRESHNESS_STATUS[freshness.state], freshness.reason, freshness.message
    )


def up_to_date(
    conditions: list[dict[str, Any]], out: Outcome, generation: int
) -> list[dict[str, Any]]:
    """``conditions`` with ``UpToDate``: set when this pass resolved (or found a pin), kept as
    it was otherwise (a pivot in progress); shared by the input kinds."""
    result = [dict(c) for c in conditions]
    if out.up_to_date is not None:
        set_conditions(result, [freshness_condition(out.up_to_date)], generation=generation)
    elif find(result, api.TYPE_UP_TO_DATE) is None:
        not_yet = Condition(
            api.TYPE_UP_TO_DATE, UNKNOWN, REASON_NOT_RESOLVED, "not compared with the catalogs yet"
        )
        set_conditions(result, [not_yet], generation=generation)
    return result


def _join(reports: list[ChildReport]) -> str:
    return "; ".join(
        r.message
        if r.state is ChildState.MISSING
        else f"{r.package} ({r.name or 'no BundleDeployment'}): {r.state.value}: {r.message}"
        for r in reports[:10]
    )


def resolution_status(obj: Mapping[str, Any], out: Outcome, generation: int) -> dict[str, Any]:
    """The full status of a Resolution (a merge patch: None removes a field)."""
    conditions: list[dict[str, Any]] = [
        dict(c) for c in (obj.get("status") or {}).get("conditions") or []
    ]
    found: list[Condition] = []
    if out.resolved is not None:
        resolved = out.resolved
        found.append(
            Condition(
                api.TYPE_RESOLVED,
                TRUE if resolved.state.ok else FALSE,
                RESOLVED_REASONS[resolved.state],
                resolved.text,
            )
        )
    elif find(conditions, api.TYPE_RESOLVED) is None:
        found.append(Condition(api.TYPE_RESOLVED, UNKNOWN, REASON_RESOLVING, "not resolved yet"))
    if out.conflict:
        found.append(Condition(TYPE_CONFLICT, TRUE, REASON_CONFLICT, out.conflict))
    else:
        found.append(Condition(TYPE_CONFLICT, FALSE, REASON_NO_CONFLICT, ""))
    progress = out.progressing
    found += [
        Condition(
            api.TYPE_PROGRESSING,
            TRUE if progress.state.moving else FALSE,
            PROGRESSING_REASONS[progress.state],
            progress.message,
        ),
        installed(out),
        healthy(out),
    ]
    set_conditions(conditions, found, generation=generation)
    set_conditions(conditions, [_ready(conditions, out)], generation=generation)
    conditions[:] = up_to_date(conditions, out, generation)
    selection = out.selection
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions,
        "selection": [
            {
                k: v
                for k, v in e.to_dict().items()
                if k in ("package", "version", "bundle", "channel", "catalog", "digest", "signedBy")
            }
            for e in sorted(selection.entries, key=lambda e: e.package)
        ]
        if selection
        else None,
        "selectionHash": selection.selection_hash if selection else None,
        "explanation": out.explanation or None,
        "pendingPlan": out.pending_plan,
    }
    status.update(shared_dependencies(out))
    status.update(out.record.to_status())
    return status


def _ready(conditions: list[dict[str, Any]], out: Outcome) -> Condition:
    """The summary ``Ready``: the first of Resolved, Installed and Healthy that is not True
    (after a failed pivot, the failure first), then a pivot in progress."""
    by_type = {c["type"]: c for c in conditions}
    progress = out.progressing
    if out.conflict:
        return Condition(api.TYPE_READY, FALSE, REASON_CONFLICT_READY, out.conflict)
    # After a failed pivot, the failure (which names the bundle) comes first, whatever state
    # the children have reached when this status is written.
    failed = progress.state is ProgressState.PIVOT_FAILED
    for type_ in (api.TYPE_RESOLVED, api.TYPE_INSTALLED, api.TYPE_HEALTHY):
        c = by_type[type_]
        if c["status"] != TRUE:
            if failed and type_ != api.TYPE_RESOLVED:
                return Condition(
                    api.TYPE_READY,
                    FALSE,
                    PROGRESSING_REASONS[progress.state],
                    f"{progress.message}; {type_}: {c['message']}",
                )
            return Condition(api.TYPE_READY, FALSE, str(c["reason"]), f"{type_}: {c['message']}")
    if progress.state not in READY_PROGRESS:
        return Condition(
            api.TYPE_READY, FALSE, PROGRESSING_REASONS[progress.state], progress.message
        )
    if out.problem:
        return Condition(api.TYPE_READY, TRUE, REASON_REPAIRED, out.problem)
    return Condition(
        api.TYPE_READY, TRUE, REASON_READY, f"revision {out.record.active} is installed and healthy"
    )
