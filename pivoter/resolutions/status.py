"""A Resolution's status from an engine :class:`~pivoter.resolutions.engine.Outcome`.

Conditions ``Resolved``, ``Conflict``, ``Progressing``, ``Installed``, ``Healthy``, the summary
``Ready`` and ``UpToDate`` (why not newer), each with the generation it was computed for; the
current selection, the explanation when unsatisfiable, the pending plan and the revision record.
Also the child summaries and ``UpToDate`` the PlatformOperator status reuses. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN, find, set_condition
from pivoter.pivot import REASON_CHILD_MISSING, ChildReport, ChildState, Phase
from pivoter.resolutions.engine import Outcome, Status3

__all__ = [
    "TYPE_CONFLICT",
    "healthy",
    "installed",
    "resolution_status",
    "shared_dependencies",
    "up_to_date",
]

TYPE_CONFLICT = "Conflict"
READY_PROGRESS = ("Idle", "Succeeded")


def installed(out: Outcome) -> Status3:
    """``Installed`` from the children of the revision in view."""
    reports = out.reports
    revision = out.record.active
    if not reports:
        pivot = out.record.pivot
        if revision is None and pivot is not None and pivot.phase is Phase.FAILED:
            return FALSE, "InstallFailed", f"revision {pivot.revision} failed: {pivot.message}"
        if revision is None:
            return FALSE, "NotInstalled", "nothing is installed yet"
        return UNKNOWN, "InstallPending", f"revision {revision} is being installed"
    failed = [r for r in reports if r.state is ChildState.FAILED]
    if failed:
        return FALSE, "InstallFailed", _join(failed)
    missing = [r for r in reports if r.state is ChildState.MISSING]
    if missing:
        return FALSE, "BundleDeploymentMissing", _join(missing)
    if all(r.state in (ChildState.READY, ChildState.UNHEALTHY) for r in reports):
        return (
            TRUE,
            "Installed",
            f"{len(reports)} bundles installed" + (f" (revision {revision})" if revision else ""),
        )
    return UNKNOWN, "InstallPending", _join([r for r in reports if r.state is not ChildState.READY])


def healthy(out: Outcome) -> Status3:
    """``Healthy`` from the children of the revision in view. A child deleted by hand is named
    (``ChildMissing``), whatever the other children's state."""
    reports = out.reports
    if not reports:
        if out.record.active is None:
            return UNKNOWN, "NotInstalled", "nothing is installed yet"
        return (
            UNKNOWN,
            "HealthUnknown",
            f"the children of revision {out.record.active} were not read",
        )
    if all(r.state is ChildState.READY for r in reports):
        return TRUE, "Healthy", f"all {len(reports)} BundleDeployments are healthy"
    missing = [r for r in reports if r.state is ChildState.MISSING]
    unhealthy = [r for r in reports if r.state is ChildState.UNHEALTHY]
    if missing:
        return FALSE, REASON_CHILD_MISSING, _join(missing + unhealthy)
    if unhealthy:
        return FALSE, "Unhealthy", _join(unhealthy)
    return UNKNOWN, "HealthUnknown", _join([r for r in reports if r.state is not ChildState.READY])


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


def up_to_date(
    conditions: list[dict[str, Any]], out: Outcome, generation: int
) -> list[dict[str, Any]]:
    """``conditions`` with ``UpToDate``: set when this pass resolved (or found a pin), kept as
    it was otherwise (a pivot in progress); shared by the input kinds."""
    result = [dict(c) for c in conditions]
    if out.up_to_date is not None:
        set_condition(result, api.TYPE_UP_TO_DATE, *out.up_to_date, generation=generation)
    elif find(result, api.TYPE_UP_TO_DATE) is None:
        set_condition(
            result,
            api.TYPE_UP_TO_DATE,
            UNKNOWN,
            "NotResolved",
            "not compared with the catalogs yet",
            generation=generation,
        )
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

    def put(type_: str, value: Status3) -> None:
        set_condition(conditions, type_, *value, generation=generation)

    if out.resolved is not None:
        put(api.TYPE_RESOLVED, out.resolved)
    elif find(conditions, api.TYPE_RESOLVED) is None:
        put(api.TYPE_RESOLVED, (UNKNOWN, "Resolving", "not resolved yet"))
    put(
        TYPE_CONFLICT,
        (TRUE, "PackageConflict", out.conflict) if out.conflict else (FALSE, "NoConflict", ""),
    )
    put(api.TYPE_PROGRESSING, out.progressing)
    put(api.TYPE_INSTALLED, installed(out))
    put(api.TYPE_HEALTHY, healthy(out))
    put(api.TYPE_READY, _ready(conditions, out))
    conditions[:] = up_to_date(conditions, out, generation)
    selection = out.selection
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions,
        "selection": [
            {
                k: v
                for k, v in e.to_dict().items()
                if k in ("package", "version", "bundle", "channel", "catalog")
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


def _ready(conditions: list[dict[str, Any]], out: Outcome) -> Status3:
    by_type = {c["type"]: c for c in conditions}
    if out.conflict:
        return FALSE, "Conflict", out.conflict
    # After a failed pivot, the failure (which names the bundle) comes first, whatever state
    # the children have reached when this status is written.
    failed = out.progressing[1] == "PivotFailed"
    for type_ in (api.TYPE_RESOLVED, api.TYPE_INSTALLED, api.TYPE_HEALTHY):
        c = by_type[type_]
        if c["status"] != TRUE:
            if failed and type_ != api.TYPE_RESOLVED:
                return FALSE, "PivotFailed", f"{out.progressing[2]}; {type_}: {c['message']}"
            return FALSE, str(c["reason"]), f"{type_}: {c['message']}"
    if out.progressing[1] not in READY_PROGRESS:
        return FALSE, out.progressing[1], out.progressing[2]
    if out.problem:
        return TRUE, "Repaired", out.problem
    return TRUE, "Ready", f"revision {out.record.active} is installed and healthy"
