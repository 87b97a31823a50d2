"""The object-level part of a plan: what a pivot to a revision would add, remove and keep, and
whether its objects pass a server-side dry run, before anyone approves it.

For a Manual input waiting for approval the engine asks :func:`objects_section`: the revision's
bundles are prepared (unpacked, rendered and dry-run, :mod:`pivoter.pivot.prepare`, as OLM
unpacks bundles for an InstallPlan awaiting approval) and their objects compared with what the
children installed (``status.inventory``). The result goes into ``status.pendingPlan.objects``;
it is computed once per selection (the engine reuses a published section with the same
selection hash).

Besides the objects added, removed and moved, the section says what the dry run would change in
the objects that exist (``changes``: each object's changed field paths and label/annotation
keys) and which workloads would have their pods replaced (``restarts``), so an approver, and
the OLM v0 adoption's pre-flight, see a restart before it happens. Those are what the live
objects were when the section was computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.inputs.revisionplan import MAX_LISTED_OBJECTS, object_changes
from pivoter.inputs.spec import InputSpec
from pivoter.pivot import (
    Children,
    Pending,
    Prepared,
    PrepareFailed,
    Preparer,
    UninstallableBundle,
    desired_child,
)
from provisioners.apply.objects import ObjectRef
from resolver.resolveset import ResolveSet

__all__ = ["objects_section"]


def objects_section(
    preparer: Preparer,
    children: Children,
    spec: InputSpec,
    *,
    owner: Mapping[str, Any],
    target: ResolveSet,
    revision: int,
) -> tuple[dict[str, Any], bool]:
    """The ``objects`` section of the plan to ``revision``, and whether it is still pending (a
    bundle is being unpacked: ask again later)."""
    try:
        desired = [
            desired_child(
                spec.ref,
                entry,
                revision=revision,
                owner=owner,
                service_account=spec.service_account,
                settings=spec.child_settings,
                primary=entry.package == spec.primary_package,
            )
            for entry in target.entries
        ]
    except UninstallableBundle as exc:
        return {"problem": str(exc)}, False
    existing = children.list()
    # Bundles prepared for a plan this one supersedes are not needed any more.
    preparer.release(spec.ref, existing, keep=preparer.bundle_names(desired))
    try:
        requires = {e.package: e.requires for e in target.entries}
        prepared = preparer.prepare(desired, owner=owner, requires=requires)
    except PrepareFailed as exc:
        return {
            "problem": f"bundle {exc.bundle} of package {exc.package} cannot be installed: {exc}"
        }, False
    if isinstance(prepared, Pending):
        return {"pending": prepared.summary()}, True
    installed = {package: inventory_of(bd.get("status")) for package, bd in existing.items()}
    section = object_changes(installed, prepared.objects)
    section["dryRun"] = prepared.summary()
    section.update(_changes_section(prepared))
    return section, False


def _changes_section(prepared: Prepared) -> dict[str, Any]:
    """``changes`` (what the apply would change in each existing object), ``restarts`` (the
    workloads whose pods would be replaced) and ``unread`` (objects it could not compare),
    each list cut at :data:`MAX_LISTED_OBJECTS` with ``more...`` saying how many were left
    out."""
    changed = sorted(
        (
            (ref, package, fields)
            for package, refs in prepared.changes.items()
            for ref, fields in refs.items()
        ),
        key=lambda item: (item[0].group, item[0].kind, item[0].namespace, item[0].name),
    )
    data: dict[str, Any] = {
        "changes": [
            {**_describe(package, ref), **fields.as_dict()}
            for ref, package, fields in changed[:MAX_LISTED_OBJECTS]
        ],
        "restarts": list(prepared.restarts[:MAX_LISTED_OBJECTS]),
    }
    if prepared.unread:
        data["unread"] = list(prepared.unread[:MAX_LISTED_OBJECTS])
    for key, total in (
        ("moreChanges", len(changed)),
        ("moreRestarts", len(prepared.restarts)),
        ("moreUnread", len(prepared.unread)),
    ):
        if total > MAX_LISTED_OBJECTS:
            data[key] = total - MAX_LISTED_OBJECTS
    return data


def _describe(package: str, ref: ObjectRef) -> dict[str, str]:
    entry = {"package": package, "apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        entry["namespace"] = ref.namespace
    return entry
