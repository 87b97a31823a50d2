"""What a pass of the input engine concludes from what it read, as pure functions: whether the
active revision still meets the request, the bundles kept only because they are installed, the
``Resolved`` note, the freshness fact (``UpToDate``: docs/pivot.md, "Why not newer"), and how the
children a pivot re-creates are reported. No cluster access; used by
:mod:`pivoter.inputs.engine`.
"""

from __future__ import annotations

from dataclasses import replace

from pivoter.inputs import held
from pivoter.inputs.facts import Freshness, FreshnessState
from pivoter.inputs.outcome import Draft
from pivoter.inputs.spec import InputSpec
from pivoter.pivot import ChildReport, ChildState
from resolver.resolveset import ResolveSet
from resolver.versions import RangeSyntaxError, parse_range

__all__ = [
    "bundles_text",
    "keep_installed",
    "meets",
    "missing_text",
    "recreated",
    "resolved_note",
    "set_freshness",
]


def meets(document: ResolveSet, spec: InputSpec) -> bool:
    """Whether ``document`` still meets every request's version range (Masterminds, as users
    write them): a request for another version cannot be met without a catalog."""
    versions = {e.package: e.version for e in document.entries}
    for request in spec.requests:
        version = versions.get(request.package)
        if version is None:
            return False
        if request.version_range:
            try:
                if not parse_range(request.version_range, "masterminds").contains(version):
                    return False
            except (RangeSyntaxError, ValueError):
                return False
    return True


def keep_installed(document: ResolveSet, active: ResolveSet | None) -> tuple[ResolveSet, list[str]]:
    """Complete the bundles the resolver kept only because they are installed (no catalog
    offers them any more, so it knows no image) from the active revision; return the document
    and those bundles' names."""
    if active is None:
        return document, []
    installed = {(e.package, e.bundle): e for e in active.entries}
    entries, orphans = [], []
    for entry in document.entries:
        known = installed.get((entry.package, entry.bundle))
        if not entry.image and known is not None:
            entries.append(known)
            orphans.append(f"{entry.package} {entry.version}")
        else:
            entries.append(entry)
    if not orphans:
        return document, []
    return replace(document, entries=tuple(entries)), orphans


def resolved_note(orphans: list[str], shared: list[held.SharedDependency] | None) -> str:
    """What the Resolved message adds: bundles kept only because they are installed, and the
    shared dependencies other inputs install."""
    note = ""
    if orphans:
        note = f"; {', '.join(orphans)} stay as installed: no selected catalog offers them any more"
    if shared:
        note += "; shared dependencies installed by other inputs: " + ", ".join(
            s.text() for s in shared
        )
    return note


def set_freshness(
    out: Draft,
    target: ResolveSet,
    active: ResolveSet | None,
    *,
    gate: tuple[str, str] | None = None,
) -> None:
    """Set ``out.up_to_date``: each bundle of ``target`` not active yet and the ``gate`` (reason,
    words) that holds it back, then the newest bundle of each requested package that the
    resolution did not take with the resolver's reason (docs/pivot.md, "Why not newer")."""
    lines: list[str] = []
    reason = ""
    if gate is not None:
        installed = {e.package: e.bundle for e in active.entries} if active else {}
        held_back = [e for e in target.entries if installed.get(e.package) != e.bundle]
        if held_back:
            reason = gate[0]
            lines += [
                f"{e.package} {e.version} ({e.bundle}) is not taken: {gate[1]}" for e in held_back
            ]
    lines += [n.text() for n in out.not_newer]
    if not lines:
        out.up_to_date = Freshness(
            FreshnessState.NEWEST,
            "Newest",
            f"nothing newer is offered for the requested packages ({bundles_text(target)})",
        )
        return
    out.up_to_date = Freshness(
        FreshnessState.NOT_NEWEST, reason or out.not_newer[0].reason, "; ".join(lines)
    )


def recreated(
    reports: list[ChildReport], recreating: tuple[str, ...], target: ResolveSet
) -> list[ChildReport]:
    """The status' view of a pivot that re-creates children deleted by hand: each of them that
    is not ready again is reported as missing, with what happened and where it stands."""
    if not recreating:
        return reports
    bundles = {e.package: e.bundle for e in target.entries}
    result = []
    for r in reports:
        if r.package not in recreating or r.state in (ChildState.READY, ChildState.MISSING):
            result.append(r)
            continue
        now = f"{r.state.value}: {r.message}" if r.message else r.state.value
        message = (
            f"BundleDeployment {r.name} (bundle {bundles.get(r.package, r.package)}) was "
            f"deleted; re-creating it (now {now})"
        )
        result.append(ChildReport(r.package, r.name, ChildState.MISSING, message, r.reason))
    return result


def missing_text(reports: list[ChildReport]) -> str:
    """The ChildMissing Event: each missing child, its bundle, and what pivoter does."""
    return "; ".join(r.message for r in reports if r.state is ChildState.MISSING)


def bundles_text(document: ResolveSet) -> str:
    return ", ".join(f"{e.package} {e.version}" for e in document.entries) or "no bundles"
