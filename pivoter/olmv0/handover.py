"""The adoption of one OLM v0 Subscription, step by step, level-triggered and crash-safe.

The order never leaves the operator unmanaged nor managed by two installers that disagree:

1. ``Planning``: a Resolution pinned to the installed CSV's version is created *paused*
   (:func:`start`): it resolves and publishes a plan but changes nothing. If no pivoter catalog
   offers the installed bundle, the adoption fails here and the Resolution is deleted: nothing
   else was touched.
2. ``Installing``: the Subscription's InstallPlans and the Subscription are deleted (OLM v0 stops
   upgrading; the CSV keeps the operator running and managed); once OLM v0 has stopped writing
   the CSV's objects (:mod:`pivoter.olmv0.quiet`: an InstallPlan sync already under way goes on
   after its InstallPlan is gone), the Resolution is unpaused:
   its child BundleDeployment applies the same bundle with ``adoptExisting``, which takes over
   the objects in place (server-side apply: same uids; the pod templates are those OLM v0
   wrote, so no rollout). Until the child is installed and healthy, OLM v0's CSV still manages
   everything.
3. ``Releasing``: OLM v0's marks are removed from every object the child now manages (the
   ``olm.owner`` labels its CSV finalizer deletes by, and ownerReferences to CSVs, which the
   garbage collector would follow), then the CSV and its OperatorCondition are deleted: OLM v0
   and the garbage collector remove what OLM v0 made for itself and pivoter did not take over
   (listed by ``pivoter adopt --dry-run``), nothing else.
4. ``Adopted``: the Resolution's version pin and ``adoptExisting`` are lifted; from now on the
   catalog's next version reaches the operator through a pivoter pivot, with rollback.

The step is recorded on the Resolution (:data:`~pivoter.olmv0.mapping.ANNOTATION_ADOPTION`)
*before* the step's actions run, and every action is idempotent (deleting what is gone,
patching to the same value), so a daemon or ``pivoter adopt`` killed anywhere resumes from the
recorded step. :func:`advance` is called by the adoption controller
(:mod:`pivoter.olmv0.controller`) and by ``pivoter adopt``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.apis.pivoter import TYPE_PROGRESSING, TYPE_RESOLVED
from pivoter.apis.resources import RESOLUTIONS
from pivoter.inputs.record import Record
from pivoter.kube import Conflict, Kube, NotFound, Object
from pivoter.olmv0 import quiet
from pivoter.olmv0.mapping import (
    ANNOTATION_ADOPTION,
    ANNOTATION_CSV,
    recorded_subscription,
    resolution_for,
)
from pivoter.olmv0.names import object_names
from pivoter.olmv0.resources import (
    CSVS,
    INSTALL_PLANS,
    LABEL_OWNER,
    LABEL_OWNER_KIND,
    LABEL_OWNER_NAMESPACE,
    OPERATOR_CONDITIONS,
    SUBSCRIPTIONS,
)
from pivoter.olmv0.survey import InstalledOperator
from pivoter.pivot import Children, ChildState, Phase, state_of
from pivoter.resolvesets import InputRef

__all__ = [
    "ADOPTED",
    "FAILED",
    "INSTALLING",
    "PLANNING",
    "RELEASING",
    "AdoptionProgress",
    "advance",
    "start",
    "step_hook",
]

log = logging.getLogger(__name__)

PLANNING = "Planning"
INSTALLING = "Installing"
RELEASING = "Releasing"
ADOPTED = "Adopted"
FAILED = "Failed"
ANNOTATION_MESSAGE = "olmv0.pivoter.io/adoption-message"
_STEP_HOOK: ContextVar[Callable[[str], None] | None] = ContextVar("step_hook", default=None)
OLM_LABELS = (LABEL_OWNER, LABEL_OWNER_NAMESPACE, LABEL_OWNER_KIND)


@dataclass(frozen=True)
class AdoptionProgress:
    """Where one adoption stands after a call to :func:`advance`."""

    step: str
    message: str

    @property
    def done(self) -> bool:
        """Finished, successfully or not."""
        return self.step in (ADOPTED, FAILED)


def start(kube: Kube, installed: InstalledOperator, name: str) -> Object:
    """Create the paused Resolution that adopts ``installed`` (or return the existing one)."""
    body = resolution_for(
        installed,
        name=name,
        adoption_step=PLANNING,
        object_names=object_names(kube, installed.installed_csv, installed.namespace),
    )
    try:
        created = kube.create(RESOLUTIONS, body)
    except Conflict:
        existing = kube.get(RESOLUTIONS, name)
        if recorded_subscription(existing).get("name") != installed.name:
            raise
        return existing
    _hold(PLANNING)
    return created


def _annotations(res: Object) -> dict[str, str]:
    return dict(res["metadata"].get("annotations") or {})


def _record(kube: Kube, name: str, step: str, message: str = "") -> None:
    """Persist the step (before its actions run)."""
    kube.merge_patch(
        RESOLUTIONS,
        name,
        {"metadata": {"annotations": {ANNOTATION_ADOPTION: step, ANNOTATION_MESSAGE: message}}},
    )
    _hold(step)


@contextlib.contextmanager
def step_hook(hook: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block and in this thread, call ``hook(step)`` right after each step is
    recorded, before its actions run: where tests hold an adoption to kill the daemon there
    (:class:`pivoter.daemon.hooks.Hooks`, passed by the adoption controller)."""
    token = _STEP_HOOK.set(hook)
    try:
        yield
    finally:
        _STEP_HOOK.reset(token)


def _hold(step: str) -> None:
    """Call the test hook of :func:`step_hook`, if any: ``step`` was just recorded."""
    hook = _STEP_HOOK.get()
    if hook is not None:
        hook(step)


def _condition(res: Object, type_: str) -> dict[str, Any]:
    for c in (res.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return {}


def _subscription(res: Object) -> tuple[str, str]:
    recorded = recorded_subscription(res)
    return str(recorded.get("namespace") or ""), str(recorded.get("name") or "")


def _delete(kube: Kube, resource: Any, name: str, namespace: str, **options: str) -> bool:
    """Delete if present; True when it is gone already."""
    try:
        kube.delete(resource, name, namespace, **options)
    except NotFound:
        return True
    return False


def _plan(kube: Kube, res: Object) -> AdoptionProgress:
    name = res["metadata"]["name"]
    resolved = _condition(res, TYPE_RESOLVED)
    if resolved.get("observedGeneration") != res["metadata"].get("generation"):
        return AdoptionProgress(PLANNING, "waiting for the Resolution to resolve")
    csv = _annotations(res)[ANNOTATION_CSV]
    resolution = Record.from_status(res.get("status")).resolution
    if resolution is not None and not resolution.ok:
        message = (
            f"no pivoter catalog offers the installed bundle {csv}: "
            f"{resolved.get('message', '')}; nothing was changed (the Resolution is deleted)"
        )
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, message)
    selection = (res.get("status") or {}).get("selection") or []
    bundles = [s.get("bundle") for s in selection]
    if resolution is None or not selection:
        return AdoptionProgress(PLANNING, "waiting for the Resolution to resolve")
    if bundles != [csv]:
        message = (
            f"the catalogs resolve to {', '.join(str(b) for b in bundles)}, not the installed "
            f"{csv}; nothing was changed (the Resolution is deleted)"
        )
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, message)
    _record(kube, name, INSTALLING)
    return _install(kube, kube.get(RESOLUTIONS, name))


def _install(kube: Kube, res: Object) -> AdoptionProgress:
    name = res["metadata"]["name"]
    namespace, subscription = _subscription(res)
    for plan in kube.list(INSTALL_PLANS, namespace)[0]:
        owners = plan["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Subscription" and o.get("name") == subscription for o in owners):
            _delete(kube, INSTALL_PLANS, plan["metadata"]["name"], namespace)
    _delete(kube, SUBSCRIPTIONS, subscription, namespace)
    if (res.get("spec") or {}).get("paused"):
        csv = _annotations(res)[ANNOTATION_CSV]
        seen = quiet.observe(kube, csv, namespace, _annotations(res).get(quiet.ANNOTATION_QUIET))
        if not seen.done:
            kube.merge_patch(
                RESOLUTIONS,
                name,
                {"metadata": {"annotations": {quiet.ANNOTATION_QUIET: seen.annotation}}},
            )
            return AdoptionProgress(
                INSTALLING,
                f"waiting for OLM v0 to stop writing the objects of {csv} "
                f"({seen.waited:.0f}/{quiet.QUIET_SECONDS:.0f} s unchanged)",
            )
        names = object_names(kube, csv, namespace)
        spec = {"paused": None, "packages": _renamed(res["spec"]["packages"], names)}
        res = kube.merge_patch(RESOLUTIONS, name, {"spec": spec})
    children = Children(kube, InputRef("Resolution", name)).list()
    states = {package: state_of(bd) for package, bd in children.items()}
    pivot = Record.from_status(res.get("status")).pivot
    if pivot is not None and pivot.phase in (Phase.FAILED, Phase.ROLLED_BACK):
        progressing = _condition(res, TYPE_PROGRESSING)
        return AdoptionProgress(
            INSTALLING,
            f"the pivot that adopts failed: {progressing.get('message', '')}; OLM v0's CSV still "
            "runs the operator; fix the cause and retry (pivoter.io/retry-now)",
        )
    if not children or any(s != ChildState.READY for s, _, _ in states.values()):
        detail = "; ".join(f"{p}: {s.value} {m}" for p, (s, _, m) in states.items())
        return AdoptionProgress(
            INSTALLING, f"waiting for the child to be installed and healthy {detail}"
        )
    _record(kube, name, RELEASING)
    return _release(kube, kube.get(RESOLUTIONS, name))


def _renamed(packages: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """The adopted package (the only one) with ``objectNames`` read again now that OLM v0 is
    quiet (:func:`pivoter.olmv0.names.object_names` says why once at the start is not enough)."""
    renamed = []
    for package in packages:
        config = {k: v for k, v in (package.get("config") or {}).items() if k != "objectNames"}
        if names:
            config["objectNames"] = names
        renamed.append({**package, "config": config})
    return renamed


def _strip(kube: Kube, ref: Any) -> None:
    """Remove OLM v0's owner labels and ownerReferences to CSVs from one adopted object."""
    resource = kube.resource(ref.api_version, ref.kind)
    try:
        obj = kube.get(resource, ref.name, ref.namespace or None)
    except NotFound:
        return
    metadata = obj["metadata"]
    labels = metadata.get("labels") or {}
    owners = metadata.get("ownerReferences") or []
    kept = [o for o in owners if o.get("kind") != "ClusterServiceVersion"]
    patch: dict[str, Any] = {}
    if any(k in labels for k in OLM_LABELS):
        patch["labels"] = dict.fromkeys(k for k in OLM_LABELS if k in labels)
    if len(kept) != len(owners):
        patch["ownerReferences"] = kept
    if patch:
        kube.merge_patch(resource, ref.name, {"metadata": patch}, ref.namespace or None)


def _release(kube: Kube, res: Object) -> AdoptionProgress:
    name = res["metadata"]["name"]
    namespace, _ = _subscription(res)
    csv = _annotations(res)[ANNOTATION_CSV]
    for bd in Children(kube, InputRef("Resolution", name)).list().values():
        for ref in inventory_of(bd.get("status")):
            _strip(kube, ref)
    # Background: what OLM v0 made for itself and pivoter did not take over (its OperatorCondition
    # and the Role for it, the Role that reads the certificate Secret, namespaced copies of roles
    # pivoter holds cluster-wide) goes with the CSV; what pivoter took over no longer names it.
    gone = _delete(kube, CSVS, csv, namespace)
    _delete(kube, OPERATOR_CONDITIONS, csv, namespace)
    if not gone:
        return AdoptionProgress(RELEASING, f"waiting for OLM v0 to let go of CSV {csv}")
    res = kube.merge_patch(
        RESOLUTIONS,
        name,
        {
            "metadata": {"annotations": {ANNOTATION_ADOPTION: ADOPTED, ANNOTATION_MESSAGE: ""}},
            "spec": {
                "packages": [_unpinned(p) for p in (res.get("spec") or {}).get("packages") or []],
                "adoptExisting": None,
            },
        },
    )
    return AdoptionProgress(ADOPTED, f"Subscription {namespace}/{_subscription(res)[1]} is adopted")


def _unpinned(package: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in package.items() if k != "versionRange"}


STEPS: dict[str, Callable[[Kube, Object], AdoptionProgress]] = {
    PLANNING: _plan,
    INSTALLING: _install,
    RELEASING: _release,
}


def advance(kube: Kube, name: str) -> AdoptionProgress:
    """Do what the adoption recorded on Resolution ``name`` needs next (idempotent)."""
    try:
        res = kube.get(RESOLUTIONS, name)
    except NotFound:
        return AdoptionProgress(FAILED, f"Resolution {name} does not exist")
    annotations = _annotations(res)
    step = annotations.get(ANNOTATION_ADOPTION, "")
    if step == ADOPTED:
        return AdoptionProgress(ADOPTED, "adopted")
    action = STEPS.get(step)
    if action is None:
        return AdoptionProgress(FAILED, f"Resolution {name} records no adoption step")
    return action(kube, res)
