"""Hand an adopted operator back to OLM v0 (``pivoter adopt --undo``), step by step, level-
triggered and crash-safe, while OLM v0 still runs.

The adoption's Resolution holds what the undo needs (the adopted Subscription, recorded in
:data:`~pivoter.olmv0.mapping.ANNOTATION_SUBSCRIPTION`), but it must go before OLM v0 takes
over. So the record is first copied onto the Resolution's child BundleDeployments, and the
children are made *inert* and kept until the very end: each loses the uninstall finalizer, gets
this module's :data:`FINALIZER` and is deleted. A BundleDeployment being deleted is never
installed, drift-corrected nor re-finalized again (nothing can undelete it), and without the
uninstall finalizer its deletion removes nothing; our finalizer keeps it, with the record and
the inventory of what it installed, until the undo finishes. The children were chosen over a
Subscription re-created early (OLM v0 has no state in which it leaves a Subscription alone) or a
record object of its own (one more object to find, clean and grant): they must be handled
anyway, they already hold the inventory, and they are found by :data:`LABEL_UNDO` after the
Resolution's deletion orphaned them.

1. ``Stopping`` (recorded on the Resolution): the Resolution is paused (no pivot, no child
   re-created) and set to ``deletionPolicy: Orphan``; every child is labelled, given the record
   and made inert as above, and the daemon must have seen each deletion (the child's
   ``status.observedGeneration``; a reconcile begun before it could still be correcting drift).
   Until the last child is inert the Resolution stays, so a child is
   never orphaned while its deletion could still uninstall (a child deleted while its live
   Resolution wants it keeps its objects anyway, :func:`pivoter.pivot.children.keep_on_delete`).
2. ``Detaching`` (recorded on the children from here on): the Resolution is deleted; nothing
   of pivoter acts on the operator any more (it keeps running).
3. ``Returning``: pivoter's owner labels are taken off every object the children installed, and
   the Subscription is re-created as it was adopted with ``startingCSV`` set to the bundle the
   children run, so OLM v0 installs exactly that CSV over the running objects (it updates what
   exists by name and labels it as its own); a Manual Subscription's InstallPlan for exactly
   that CSV is approved (it changes no version). Waits until the CSV has succeeded.
4. ``Cleaning``: every object the children installed is left with one manager, OLM v0's CSV
   (:func:`_settle`): what OLM v0 replaced by a twin of its own (webhook configurations, which
   would answer twice, and the RBAC it generates under random names) is deleted; what it uses
   without marking it again gets back the mark the adoption took off. OLM v0 may still run its
   InstallPlan's steps once more after it is Complete (a sync from a stale copy, as
   :mod:`pivoter.olmv0.quiet` describes), and each run resets the bundle's Roles and
   RoleBindings to their manifest, taking that mark off again (CI: bpfman-operator's
   RoleBinding was left with no mark). So every pass settles every object again, and the step
   goes on only once a whole :data:`~pivoter.olmv0.quiet.QUIET_SECONDS` window passed with
   nothing to put back (recorded on the children: :data:`ANNOTATION_SETTLED`). Then the
   children's finalizer goes and they vanish. Nothing of the undo is left.

Each step is recorded before its actions run (:func:`step_hook` lets tests stop there) and
every action is idempotent, so ``pivoter adopt --undo`` killed anywhere finds the interrupted
undo (:func:`undo_targets`) and finishes it. Called by ``pivoter adopt --undo``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, RESOLUTIONS
from pivoter.controllers.uninstall import FINALIZER as UNINSTALL_FINALIZER
from pivoter.kube import Conflict, Kube, NotFound, Object
from pivoter.olmv0 import handover, quiet
from pivoter.olmv0.adoptrequests import ANNOTATION_ADOPT
from pivoter.olmv0.handover import ADOPTED, INSTALLING, RELEASING
from pivoter.olmv0.mapping import (
    ANNOTATION_ADOPTION,
    ANNOTATION_DEPENDENCIES,
    ANNOTATION_SUBSCRIPTION,
    LABEL_ADOPTED_FROM,
    recorded_dependencies,
    recorded_subscription,
)
from pivoter.olmv0.resources import (
    CSVS,
    INSTALL_PLANS,
    LABEL_OWNER,
    LABEL_OWNER_KIND,
    LABEL_OWNER_NAMESPACE,
    SUBSCRIPTIONS,
)
from pivoter.pivot import Children
from pivoter.pivot.naming import ANNOTATION_BUNDLE, ANNOTATION_PACKAGE
from pivoter.resolvesets import InputRef
from provisioners.apply.objects import LABEL_OWNER_KIND as PIVOTER_OWNER_KIND
from provisioners.apply.objects import LABEL_OWNER_NAME as PIVOTER_OWNER_NAME
from provisioners.apply.objects import ObjectRef

__all__ = [
    "CLEANING",
    "DETACHING",
    "FAILED",
    "HANDED_BACK",
    "RETURNING",
    "STOPPING",
    "UndoProgress",
    "UndoTarget",
    "advance",
    "describe",
    "hand_back",
    "step_hook",
    "undo_targets",
]

STOPPING = "Stopping"
DETACHING = "Detaching"
RETURNING = "Returning"
CLEANING = "Cleaning"
HANDED_BACK = "HandedBack"
FAILED = "Failed"
ORDER = (STOPPING, DETACHING, RETURNING, CLEANING)

ANNOTATION_UNDO = handover.ANNOTATION_UNDO
"""The step the undo reached: on the Resolution in ``Stopping``, on its children from then on
(the handover stops once it is there)."""
ANNOTATION_STARTING_CSV = "olmv0.pivoter.io/starting-csv"
"""On a child being handed back: the CSV the re-created Subscription starts at."""
ANNOTATION_SETTLED = "olmv0.pivoter.io/settled-since"
"""On a child in ``Cleaning``: ``<digest> <unix seconds>``, the marks of the objects the children
installed once settled, and since when nothing had to be put back
(:func:`pivoter.olmv0.quiet.window`)."""
LABEL_UNDO = "olmv0.pivoter.io/undo-of"
"""On a child being handed back: its Resolution's name (found by it once the Resolution is gone;
the Resolution's own child labels are removed when it is deleted)."""
FINALIZER = "olmv0.pivoter.io/hand-back"
"""Keeps an inert child (and the record on it) until the undo finishes."""
PIVOTER_LABELS = (PIVOTER_OWNER_KIND, PIVOTER_OWNER_NAME)
"""The owner labels pivoter's BundleDeployments put on what they apply."""
LABEL_PERMISSIONS_HASH = "olm.permissions.hash"
"""On the RBAC OLM v0 generates from a CSV's permissions: the hash of the rules."""
RBAC_KINDS = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
POLL = 1.0
UNDOABLE = (INSTALLING, RELEASING, ADOPTED)
"""The adoption steps an undo starts from."""

_STEP_HOOK: ContextVar[Callable[[str], None] | None] = ContextVar("undo_step_hook", default=None)


@dataclass(frozen=True)
class UndoTarget:
    """One adopted operator to hand back, or an undo interrupted midway (``step`` set)."""

    resolution: str
    namespace: str
    subscription: str
    starting_csv: str
    step: str = ""


@dataclass(frozen=True)
class UndoProgress:
    """Where one undo stands after a call to :func:`advance`."""

    step: str
    message: str

    @property
    def done(self) -> bool:
        """Finished, successfully or not."""
        return self.step in (HANDED_BACK, FAILED)


@contextlib.contextmanager
def step_hook(hook: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block and in this thread, call ``hook(step)`` right after each undo step is
    recorded, before its actions run: where tests stop an undo to kill it there."""
    token = _STEP_HOOK.set(hook)
    try:
        yield
    finally:
        _STEP_HOOK.reset(token)


def _hold(step: str) -> None:
    hook = _STEP_HOOK.get()
    if hook is not None:
        hook(step)


# -- finding what to hand back --------------------------------------------------------------------


def _annotations(obj: Object) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def _get(kube: Kube, name: str) -> Object | None:
    try:
        return kube.get(RESOLUTIONS, name)
    except NotFound:
        return None


def _marked(kube: Kube, resolution: str) -> list[Object]:
    """The children already taken into the undo of ``resolution``."""
    items, _ = kube.list(BUNDLE_DEPLOYMENTS, label_selector=f"{LABEL_UNDO}={resolution}")
    return items


def _children(kube: Kube, resolution: str, res: Object | None) -> list[Object]:
    """Every child of the undo: those already marked, and (while it exists) the Resolution's."""
    found = {bd["metadata"]["name"]: bd for bd in _marked(kube, resolution)}
    if res is not None:
        for bd in Children(kube, InputRef("Resolution", resolution)).list().values():
            found.setdefault(bd["metadata"]["name"], bd)
    return [found[name] for name in sorted(found)]


def _step(res: Object | None, children: list[Object]) -> str:
    """The latest step recorded on any of the undo's objects ('' when not started): a step is
    recorded only once the one before it is done, so the latest is where to go on."""
    recorded = [_annotations(o).get(ANNOTATION_UNDO, "") for o in [*children, res] if o]
    reached = [ORDER.index(s) for s in recorded if s in ORDER]
    return ORDER[max(reached)] if reached else ""


def _primary(record: dict[str, Any], children: list[Object]) -> Object | None:
    """The child of the Subscription's own package (others are its dependencies)."""
    package = str((record.get("spec") or {}).get("name") or "")
    for bd in children:
        if _annotations(bd).get(ANNOTATION_PACKAGE) == package:
            return bd
    return children[0] if children else None


def _starting_csv(res: Object | None, children: list[Object], record: dict[str, Any]) -> str:
    """The CSV the Subscription is re-created at: the bundle the operator's child runs."""
    for bd in children:
        recorded = _annotations(bd).get(ANNOTATION_STARTING_CSV)
        if recorded:
            return recorded
    primary = _primary(record, children)
    if primary is not None and _annotations(primary).get(ANNOTATION_BUNDLE):
        return _annotations(primary)[ANNOTATION_BUNDLE]
    selection = ((res or {}).get("status") or {}).get("selection") or []
    return str(selection[0].get("bundle") or "") if selection else ""


def _target(kube: Kube, name: str, res: Object | None) -> UndoTarget | None:
    children = _children(kube, name, res)
    holders = [o for o in [res, *children] if o is not None]
    record = next((r for r in map(recorded_subscription, holders) if r.get("name")), {})
    if not record:
        return None
    return UndoTarget(
        resolution=name,
        namespace=str(record.get("namespace") or ""),
        subscription=str(record["name"]),
        starting_csv=_starting_csv(res, children, record),
        step=_step(res, children),
    )


def undo_targets(kube: Kube, namespace: str, subscription: str = "") -> list[UndoTarget]:
    """What ``pivoter adopt --undo`` hands back in ``namespace`` (or of just ``subscription``):
    the adopted Resolutions, and the undos interrupted midway (found by their children once
    their Resolution is gone)."""
    resolutions, _ = kube.list(RESOLUTIONS, label_selector=f"{LABEL_ADOPTED_FROM}={namespace}")
    names: dict[str, Object | None] = {}
    for res in resolutions:
        annotations = _annotations(res)
        # Past the point of no return (the Subscription deleted) an adoption can be undone at
        # any step, also one whose pivot failed; in Planning nothing was changed yet.
        if annotations.get(ANNOTATION_ADOPTION) in UNDOABLE or annotations.get(ANNOTATION_UNDO):
            names[res["metadata"]["name"]] = res
    marked, _ = kube.list(
        BUNDLE_DEPLOYMENTS, label_selector=f"{LABEL_ADOPTED_FROM}={namespace},{LABEL_UNDO}"
    )
    for bd in marked:
        name = bd["metadata"]["labels"][LABEL_UNDO]
        names.setdefault(name, _get(kube, name))
    targets = [_target(kube, name, res) for name, res in sorted(names.items())]
    return [
        t for t in targets if t is not None and (not subscription or t.subscription == subscription)
    ]


def describe(target: UndoTarget) -> str:
    """One line: what handing ``target`` back does (or, interrupted, what is left to do)."""
    line = (
        f"Resolution {target.resolution} (orphaning what it installed) -> Subscription "
        f"{target.namespace}/{target.subscription} with startingCSV {target.starting_csv}"
    )
    if target.step:
        line += f" (resuming the interrupted hand-back at step {target.step})"
    return line


# -- the steps ------------------------------------------------------------------------------------


def _record(kube: Kube, step: str, children: list[Object]) -> None:
    """Persist ``step`` on the undo's children (before its actions run)."""
    patch = {"metadata": {"annotations": {ANNOTATION_UNDO: step}}}
    for bd in children:
        with contextlib.suppress(NotFound):
            kube.merge_patch(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], patch)
    _hold(step)


def _inert(bd: Object) -> bool:
    """Whether a child can no longer install, correct drift nor uninstall, and stays."""
    metadata = bd["metadata"]
    finalizers = metadata.get("finalizers") or []
    return bool(
        metadata.get("deletionTimestamp")
        and FINALIZER in finalizers
        and UNINSTALL_FINALIZER not in finalizers
    )


def _seen(bd: Object) -> bool:
    """Whether the daemon has seen the child's deletion (its ``status.observedGeneration``
    reached the generation the deletion gave it): reconciles of one child never overlap, so no
    reconcile begun before the deletion is still applying what the child installed (one that
    corrected drift for a minute under load did, after OLM v0 had taken the objects back)."""
    observed = (bd.get("status") or {}).get("observedGeneration")
    return observed is not None and observed == bd["metadata"].get("generation")


def _make_inert(
    kube: Kube, target: UndoTarget, bd: Object, record: str, dependencies: str
) -> Object | None:
    """Mark one child (label, ``record``) and make it inert; the child as it is now, None if
    gone. Each write is guarded or idempotent: one that lost a race is done again next time."""
    name = bd["metadata"]["name"]
    marks = {
        "metadata": {
            "labels": {LABEL_UNDO: target.resolution, LABEL_ADOPTED_FROM: target.namespace},
            "annotations": {
                ANNOTATION_SUBSCRIPTION: record,
                ANNOTATION_DEPENDENCIES: dependencies or None,
                ANNOTATION_STARTING_CSV: target.starting_csv,
                ANNOTATION_UNDO: STOPPING,
            },
        }
    }
    try:
        if (bd["metadata"].get("labels") or {}).get(LABEL_UNDO) != target.resolution:
            bd = kube.merge_patch(BUNDLE_DEPLOYMENTS, name, marks)
        finalizers = list(bd["metadata"].get("finalizers") or [])
        if not bd["metadata"].get("deletionTimestamp"):
            # No finalizer can be added to an object being deleted: ours goes on first.
            kept = [f for f in finalizers if f not in (UNINSTALL_FINALIZER, FINALIZER)]
            if FINALIZER not in finalizers or UNINSTALL_FINALIZER in finalizers:
                bd = kube.set_finalizers(BUNDLE_DEPLOYMENTS, bd, [*kept, FINALIZER])
            # Deleted only as traded: had the controller put its uninstall finalizer back in
            # between, a deletion would start an uninstall that taking the finalizer off again
            # cannot stop (the controller may already be deleting). Conflict: trade again.
            kube.delete(
                BUNDLE_DEPLOYMENTS, name, resource_version=bd["metadata"]["resourceVersion"]
            )
            bd = kube.get(BUNDLE_DEPLOYMENTS, name)
        finalizers = list(bd["metadata"].get("finalizers") or [])
        if UNINSTALL_FINALIZER in finalizers:
            # Deleted by someone else before the trade: take it off (it cannot come back now
            # that the child is being deleted).
            kept = [f for f in finalizers if f != UNINSTALL_FINALIZER]
            bd = kube.set_finalizers(BUNDLE_DEPLOYMENTS, bd, kept)
    except (Conflict, NotFound):
        try:
            return kube.get(BUNDLE_DEPLOYMENTS, name)
        except NotFound:
            return None
    return bd


def _spec(kube: Kube, target: UndoTarget) -> dict[str, Any]:
    """The adopted Subscription's spec, as recorded on the Resolution or its children."""
    holders = [o for o in [_get(kube, target.resolution)] if o is not None]
    holders += _marked(kube, target.resolution)
    for holder in holders:
        record = recorded_subscription(holder)
        if record.get("name"):
            return dict(record.get("spec") or {})
    return {}


def _stop(kube: Kube, target: UndoTarget) -> UndoProgress:
    res = _get(kube, target.resolution)
    if res is None:
        # Deleted by someone else mid-step: the marked children carry on.
        children = _marked(kube, target.resolution)
        if not children or not all(_inert(bd) for bd in children):
            return UndoProgress(
                FAILED,
                f"Resolution {target.resolution} was deleted before its children were stopped; "
                "see docs/migrate-from-olm-v0.md (Handing back) to finish by hand",
            )
        if not all(_seen(bd) for bd in children):
            return UndoProgress(STOPPING, _unseen(children))
        return _detach_recorded(kube, target, children)
    spec = res.get("spec") or {}
    if not spec.get("paused") or spec.get("deletionPolicy") != "Orphan":
        kube.merge_patch(
            RESOLUTIONS, target.resolution, {"spec": {"paused": True, "deletionPolicy": "Orphan"}}
        )
    children = _children(kube, target.resolution, res)
    giving_back = bool(res["metadata"].get("deletionTimestamp"))
    if not children and (
        giving_back or _annotations(res).get(ANNOTATION_ADOPTION) in (INSTALLING, RELEASING)
    ):
        # Once it deleted the Resolution, the give-back goes on whatever step a handover that
        # was already under way recorded since (CI: one recorded a step after the undo began).
        return _give_back_unapplied(kube, target, res)
    if not children:
        return UndoProgress(
            FAILED,
            f"Resolution {target.resolution} has no BundleDeployment: nothing runs the operator "
            "for pivoter; nothing was handed back",
        )
    record = json.dumps(
        {"namespace": target.namespace, "name": target.subscription, "spec": _spec(kube, target)},
        sort_keys=True,
    )
    dependencies = _annotations(res).get(ANNOTATION_DEPENDENCIES, "")
    now = [_make_inert(kube, target, bd, record, dependencies) for bd in children]
    left = [bd for bd in now if bd is not None]
    if len(left) != len(children) or not all(_inert(bd) for bd in left):
        names = ", ".join(bd["metadata"]["name"] for bd in children)
        return UndoProgress(STOPPING, f"stopping BundleDeployments {names}")
    if not all(_seen(bd) for bd in left):
        return UndoProgress(STOPPING, _unseen(left))
    return _detach_recorded(kube, target, left)


def _unseen(children: list[Object]) -> str:
    names = ", ".join(bd["metadata"]["name"] for bd in children if not _seen(bd))
    return (
        f"waiting for the daemon to see BundleDeployments {names} stopped (is the daemon running?)"
    )


def _give_back_unapplied(kube: Kube, target: UndoTarget, res: Object) -> UndoProgress:
    """An adoption stopped past its point of no return before pivoter applied anything (no
    child): OLM v0's CSVs still run the operator; its Subscriptions are re-created (the record
    is on the Resolution, which stays, paused, until they are back), then the Resolution goes."""
    members = [
        (target.subscription, _spec(kube, target), target.starting_csv),
        *_dependencies(kube, target, []),
    ]
    waiting = []
    for subscription, spec, starting in members:
        body = {
            "apiVersion": SUBSCRIPTIONS.api_version,
            "kind": SUBSCRIPTIONS.kind,
            "metadata": {"name": subscription, "namespace": target.namespace},
            "spec": {**spec, "startingCSV": starting},
        }
        with contextlib.suppress(Conflict):
            kube.create(SUBSCRIPTIONS, body, target.namespace)
        _withdraw_request(kube, target.namespace, subscription)
    plans = _group_plans(kube, target.namespace, [m[0] for m in members])
    _approve(kube, target.namespace, plans, {m[2] for m in members})
    for _subscription, _spec_of, starting in members:
        try:
            csv = kube.get(CSVS, starting, target.namespace)
        except NotFound:
            csv = {}
        if (csv.get("status") or {}).get("phase") != "Succeeded":
            waiting.append(f"CSV {starting}")
    if waiting:
        return UndoProgress(
            STOPPING, f"Subscriptions re-created; waiting for {', '.join(waiting)} to succeed"
        )
    if not res["metadata"].get("deletionTimestamp"):
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, target.resolution)
    if _get(kube, target.resolution) is not None:
        return UndoProgress(STOPPING, f"waiting for Resolution {target.resolution} to be deleted")
    return UndoProgress(
        HANDED_BACK,
        f"handed back: Subscription {target.namespace}/{target.subscription} runs CSV "
        f"{target.starting_csv} again (pivoter had applied nothing)",
    )


def _withdraw_request(kube: Kube, namespace: str, subscription: str) -> None:
    """Take the adoption request (:data:`~pivoter.olmv0.adoptrequests.ANNOTATION_ADOPT`) off a
    Subscription that is handed back and was never deleted (an adoption stopped before OLM v0
    let go of it): else, once the Resolution is gone, the daemon would adopt it again at once
    (CI: the undo then found a new Resolution). A request on the Namespace stays the
    Namespace's."""
    annotations = {ANNOTATION_ADOPT: None}
    with contextlib.suppress(NotFound):
        sub = kube.get(SUBSCRIPTIONS, subscription, namespace)
        if ANNOTATION_ADOPT in (sub["metadata"].get("annotations") or {}):
            patch = {"metadata": {"annotations": annotations}}
            kube.merge_patch(SUBSCRIPTIONS, subscription, patch, namespace)


def _detach_recorded(kube: Kube, target: UndoTarget, children: list[Object]) -> UndoProgress:
    _record(kube, DETACHING, children)
    return _detach(kube, target)


def _detach(kube: Kube, target: UndoTarget) -> UndoProgress:
    res = _get(kube, target.resolution)
    if res is not None:
        if (res.get("spec") or {}).get("deletionPolicy") != "Orphan":
            patch = {"spec": {"deletionPolicy": "Orphan"}}
            kube.merge_patch(RESOLUTIONS, target.resolution, patch)
        if not res["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(NotFound):
                kube.delete(RESOLUTIONS, target.resolution)
        return UndoProgress(
            DETACHING,
            f"waiting for Resolution {target.resolution} to be deleted (is the daemon running?)",
        )
    _record(kube, RETURNING, _marked(kube, target.resolution))
    return _return(kube, target)


def _inventory(children: list[Object]) -> list[ObjectRef]:
    return [ref for bd in children for ref in inventory_of(bd.get("status"))]


def _unlabel(kube: Kube, ref: ObjectRef) -> None:
    """Take pivoter's owner labels off one object (left as it is otherwise)."""
    try:
        resource = kube.resource(ref.api_version, ref.kind)
        obj = kube.get(resource, ref.name, ref.namespace or None)
    except NotFound:
        return
    labels = obj["metadata"].get("labels") or {}
    if any(k in labels for k in PIVOTER_LABELS):
        patch = {"metadata": {"labels": dict.fromkeys(PIVOTER_LABELS)}}
        with contextlib.suppress(NotFound):
            kube.merge_patch(resource, ref.name, patch, ref.namespace or None)


def _return(kube: Kube, target: UndoTarget) -> UndoProgress:
    children = _marked(kube, target.resolution)
    for ref in _inventory(children):
        _unlabel(kube, ref)
    # The dependencies taken with the Subscription (pivoter.olmv0.groups) go back with it, each
    # at the bundle its own child ran; OLM v0 resolves them together.
    members = [
        (target.subscription, _spec(kube, target), target.starting_csv),
        *_dependencies(kube, target, children),
    ]
    waiting = []
    for subscription, spec, starting in members:
        body = {
            "apiVersion": SUBSCRIPTIONS.api_version,
            "kind": SUBSCRIPTIONS.kind,
            "metadata": {"name": subscription, "namespace": target.namespace},
            "spec": {**spec, "startingCSV": starting},
        }
        with contextlib.suppress(Conflict):
            kube.create(SUBSCRIPTIONS, body, target.namespace)
    plans = _group_plans(kube, target.namespace, [m[0] for m in members])
    _approve(kube, target.namespace, plans, {m[2] for m in members})
    for _subscription, _spec_of, starting in members:
        try:
            csv = kube.get(CSVS, starting, target.namespace)
        except NotFound:
            csv = {}
        phase = (csv.get("status") or {}).get("phase")
        if phase == "Succeeded" and not _installed(plans, starting):
            phase = "Succeeded, its InstallPlan not yet Complete"
        if phase != "Succeeded":
            waiting.append(f"CSV {starting} (now {phase or 'absent'})")
    if waiting:
        names = ", ".join(f"{target.namespace}/{m[0]}" for m in members)
        return UndoProgress(
            RETURNING,
            f"Subscription {names} re-created; waiting for {', '.join(waiting)} to succeed",
        )
    _record(kube, CLEANING, children)
    return _clean(kube, target)


def _dependencies(
    kube: Kube, target: UndoTarget, children: list[Object]
) -> list[tuple[str, dict[str, Any], str]]:
    """The dependencies the adoption took with the Subscription: each one's Subscription name,
    spec, and the CSV it is re-created at (the bundle its child ran)."""
    holders = [o for o in [_get(kube, target.resolution)] if o is not None] + children
    recorded = next((d for d in map(recorded_dependencies, holders) if d), [])
    found = []
    for dependency in recorded:
        starting = next(
            (
                _annotations(bd).get(ANNOTATION_BUNDLE, "")
                for bd in children
                if _annotations(bd).get(ANNOTATION_PACKAGE) == dependency["package"]
            ),
            "",
        )
        found.append(
            (
                str(dependency["name"]),
                dict(dependency.get("spec") or {}),
                starting or str(dependency["csv"]),
            )
        )
    return found


def _group_plans(kube: Kube, namespace: str, subscriptions: Iterable[str]) -> list[Object]:
    """The InstallPlans of the group's Subscriptions as they are now (owned by one of them, by
    uid: a plan from before the adoption is not one). OLM v0 resolves a namespace at once, and a
    plan is owned by the Subscriptions that existed when it resolved: a dependency's Subscription
    re-created a moment after its dependent's may own no plan at all, its CSV installed by the
    dependent's plan."""
    uids = set()
    for name in subscriptions:
        with contextlib.suppress(NotFound):
            uids.add(kube.get(SUBSCRIPTIONS, name, namespace)["metadata"]["uid"])
    return [
        plan
        for plan in kube.list(INSTALL_PLANS, namespace)[0]
        if any(
            o.get("kind") == SUBSCRIPTIONS.kind and o.get("uid") in uids
            for o in plan["metadata"].get("ownerReferences") or []
        )
    ]


def _csvs(plan: Object) -> list[str]:
    return list((plan.get("spec") or {}).get("clusterServiceVersionNames") or [])


def _installed(plans: list[Object], csv: str) -> bool:
    """Whether OLM v0 finished installing ``csv`` (a plan of the group that installs it made
    every object, the generated RBAC included, before the next step compares what it made with
    what pivoter had)."""
    return any(
        (p.get("status") or {}).get("phase") == "Complete" and csv in _csvs(p) for p in plans
    )


def _approve(kube: Kube, namespace: str, plans: list[Object], running: set[str]) -> None:
    """A Manual Subscription's InstallPlan that installs only CSVs of the group that already run
    is approved: it changes no version, and handing back is what was asked (any other plan is
    left alone)."""
    for plan in plans:
        names = _csvs(plan)
        if names and set(names) <= running and not (plan.get("spec") or {}).get("approved"):
            with contextlib.suppress(NotFound):
                patch = {"spec": {"approved": True}}
                kube.merge_patch(INSTALL_PLANS, plan["metadata"]["name"], patch, namespace)


def _clean(kube: Kube, target: UndoTarget) -> UndoProgress:
    children = _marked(kube, target.resolution)
    holders = [o for o in [_get(kube, target.resolution)] if o is not None] + children
    recorded = next((d for d in map(recorded_dependencies, holders) if d), [])
    dependency_packages = {str(d["package"]) for d in recorded}
    marks: list[str] = []
    wrote = False
    for bd in children:
        mine = _annotations(bd)
        starting = (
            mine.get(ANNOTATION_BUNDLE, "")
            if mine.get(ANNOTATION_PACKAGE) in dependency_packages
            else target.starting_csv
        )
        try:
            csv = kube.get(CSVS, starting, target.namespace)
        except NotFound:
            # Deleted since it succeeded: OLM v0 is not done, or someone removed it; look again.
            return UndoProgress(CLEANING, f"CSV {starting} is gone; waiting for it")
        for ref in inventory_of(bd.get("status")):
            seen, changed = _settle(kube, target, csv, ref)
            marks.append(seen)
            wrote = wrote or changed
    # A late InstallPlan sync of OLM v0 can take a mark off again (module docstring): the
    # children, which hold the inventory, stay until a whole window passed with nothing to redo.
    since = next((a for bd in children if (a := _annotations(bd).get(ANNOTATION_SETTLED))), None)
    settled = quiet.window(quiet.digest_of(marks), None if wrote else since)
    if children and not settled.done:
        if settled.annotation != since:
            patch = {"metadata": {"annotations": {ANNOTATION_SETTLED: settled.annotation}}}
            for bd in children:
                with contextlib.suppress(NotFound):
                    kube.merge_patch(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], patch)
        return UndoProgress(
            CLEANING,
            "waiting for OLM v0 to leave the marks alone "
            f"({settled.waited:.0f}/{quiet.QUIET_SECONDS:.0f} s with nothing to put back)",
        )
    for bd in children:
        finalizers = bd["metadata"].get("finalizers") or []
        with contextlib.suppress(NotFound, Conflict):
            kube.set_finalizers(BUNDLE_DEPLOYMENTS, bd, [f for f in finalizers if f != FINALIZER])
    if _marked(kube, target.resolution):
        return UndoProgress(CLEANING, "waiting for the stopped BundleDeployments to go")
    return UndoProgress(
        HANDED_BACK,
        f"handed back: Subscription {target.namespace}/{target.subscription} runs CSV "
        f"{target.starting_csv} again",
    )


def _olm_owned(obj: Object, csv: str) -> bool:
    """Whether OLM v0 marked ``obj`` as the CSV's (its owner label or an ownerReference)."""
    metadata = obj["metadata"]
    owners = metadata.get("ownerReferences") or []
    return (metadata.get("labels") or {}).get(LABEL_OWNER) == csv or any(
        o.get("kind") == CSVS.kind and o.get("name") == csv for o in owners
    )


def _marks(ref: ObjectRef, obj: Object | None) -> str:
    """What :func:`_settle` looks after on one object: it exists, and who marked it."""
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    if obj is None:
        return f"{where} absent"
    metadata = obj["metadata"]
    labels = metadata.get("labels") or {}
    olm = sorted((k, v) for k, v in labels.items() if k in handover.OLM_LABELS)
    owners = sorted(
        str(o.get("uid"))
        for o in metadata.get("ownerReferences") or []
        if o.get("kind") == CSVS.kind
    )
    return f"{where} {metadata.get('uid')} {olm} {owners}"


def _settle(kube: Kube, target: UndoTarget, csv: Object, ref: ObjectRef) -> tuple[str, bool]:
    """Leave one object the children installed with exactly one manager, OLM v0's CSV (which
    has succeeded). What OLM v0 re-marked is left alone, and so are CRDs (OLM v0's through the
    InstallPlan, never marked). What OLM v0 replaced by a twin of its own is deleted: webhook
    configurations (it finds its own by label and makes new ones) and the RBAC it generates
    from the CSV's permissions (named with a random suffix; the twin carries the same
    ``olm.permissions.hash``). What it uses as it is but did not mark again (a bundle's
    ServiceAccount, its webhook certificate Secret) gets back the mark the adoption took off:
    an ownerReference to the CSV in the CSV's namespace, the owner labels elsewhere.

    Returns the object's marks as it is left (:func:`_marks`) and whether anything had to be
    written."""
    if ref.kind == "CustomResourceDefinition":
        return f"{ref.kind} /{ref.name} left as it is", False
    resource = kube.resource(ref.api_version, ref.kind)
    namespace = ref.namespace or None
    try:
        obj = kube.get(resource, ref.name, namespace)
    except NotFound:
        return _marks(ref, None), False
    name = csv["metadata"]["name"]
    if _olm_owned(obj, name):
        return _marks(ref, obj), False
    labels = obj["metadata"].get("labels") or {}
    if ref.kind.endswith("WebhookConfiguration") or _twinned(kube, resource, obj, name):
        with contextlib.suppress(NotFound):
            kube.delete(resource, ref.name, namespace)
        return _marks(ref, None), True
    if ref.namespace == target.namespace:
        owner = {
            "apiVersion": CSVS.api_version,
            "kind": CSVS.kind,
            "name": name,
            "uid": csv["metadata"]["uid"],
            "blockOwnerDeletion": False,
            "controller": False,
        }
        owners = [*(obj["metadata"].get("ownerReferences") or []), owner]
        patch: dict[str, Any] = {"metadata": {"ownerReferences": owners}}
    elif not ref.namespace:
        marks = {
            LABEL_OWNER: name,
            LABEL_OWNER_NAMESPACE: target.namespace,
            LABEL_OWNER_KIND: CSVS.kind,
        }
        patch = {"metadata": {"labels": {**labels, **marks}}}
    else:
        return _marks(ref, obj), False  # in another namespace: OLM v0 marks nothing there
    try:
        return _marks(ref, kube.merge_patch(resource, ref.name, patch, namespace)), True
    except NotFound:
        return _marks(ref, None), True


def _twinned(kube: Kube, resource: Any, obj: Object, csv: str) -> bool:
    """Whether ``obj`` is RBAC OLM v0 generated and has made again under another name."""
    digest = (obj["metadata"].get("labels") or {}).get(LABEL_PERMISSIONS_HASH)
    if not digest or resource.kind not in RBAC_KINDS:
        return False
    namespace = obj["metadata"].get("namespace")
    selector = f"{LABEL_PERMISSIONS_HASH}={digest},{LABEL_OWNER}={csv}"
    twins, _ = kube.list(resource, namespace, label_selector=selector)
    # Two service accounts with the same rules get roles of the same hash: a binding's twin
    # must also bind the same subjects, so that nobody loses a grant.
    return any(
        t["metadata"]["name"] != obj["metadata"]["name"]
        and t.get("subjects") == obj.get("subjects")
        for t in twins
    )


STEPS: dict[str, Callable[[Kube, UndoTarget], UndoProgress]] = {
    STOPPING: _stop,
    DETACHING: _detach,
    RETURNING: _return,
    CLEANING: _clean,
}


def advance(kube: Kube, target: UndoTarget) -> UndoProgress:
    """Do what the undo of ``target`` needs next (idempotent), starting it if it has not
    started; the step is read from the cluster again, not from ``target``."""
    res = _get(kube, target.resolution)
    step = _step(res, _children(kube, target.resolution, res))
    if not step:
        if res is None:
            return UndoProgress(
                HANDED_BACK, f"handed back: nothing of {target.resolution} is left to hand back"
            )
        patch = {"metadata": {"annotations": {ANNOTATION_UNDO: STOPPING}}}
        kube.merge_patch(RESOLUTIONS, target.resolution, patch)
        _hold(STOPPING)
        step = STOPPING
    return STEPS[step](kube, target)


def hand_back(
    kube: Kube,
    target: UndoTarget,
    *,
    timeout: float,
    on_step: Callable[[UndoProgress], None] | None = None,
) -> str:
    """Advance the undo of ``target`` until it is done or ``timeout`` passes; one line saying
    what happened (starting with ``handed back`` when it did). ``on_step`` is told each new step
    (the CLI prints it)."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        progress = advance(kube, target)
        if on_step is not None and progress.step != last:
            on_step(progress)
        last = progress.step
        if progress.done:
            return progress.message
        if time.monotonic() > deadline:
            return f"{target.resolution}: timed out after {timeout:g} s at {progress.step}: " + (
                progress.message
            )
        time.sleep(POLL)
