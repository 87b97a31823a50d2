"""The object-level part of a plan: what a pivot to a revision would add, remove and keep, and
whether its objects pass a server-side dry run, before anyone approves it.

For a Manual input waiting for approval the engine asks :func:`objects_section`: the revision's
bundles are prepared (unpacked, rendered and dry-run, :mod:`pivoter.pivot.prepare`, as OLM
unpacks bundles for an InstallPlan awaiting approval) and their objects compared with what the
children installed (``status.inventory``). The result goes into ``status.pendingPlan.objects``;
it is computed once per selection (the engine reuses a published section with the same
selection hash).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.inputs.revisionplan import object_changes
from pivoter.inputs.spec import InputSpec
from pivoter.pivot import (
    Children,
    Pending,
    PrepareFailed,
    Preparer,
    UninstallableBundle,
    desired_child,
)
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
    return section, False
