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
import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.apis.pivoter import TYPE_PROGRESSING, TYPE_RESOLVED
from pivoter.apis.resources import RESOLUTIONS
from pivoter.apis.views import ANNOTATION_TAKEOVER
from pivoter.inputs.record import Record
from pivoter.kube import Conflict, Kube, NotFound, Object
from pivoter.olmv0 import quiet
from pivoter.olmv0.mapping import (
    ANNOTATION_ADOPTION,
    ANNOTATION_CSV,
    recorded_dependencies,
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
    "ANNOTATION_FAILED",
    "ANNOTATION_FAILED_AT",
    "ANNOTATION_MESSAGE",
    "FAILED",
    "INSTALLING",
    "PLANNING",
    "RELEASING",
    "RETRY_FAILED_SECONDS",
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
ANNOTATION_UNDO = "olmv0.pivoter.io/undo"
"""Set by ``pivoter adopt --undo`` (:mod:`pivoter.olmv0.undo`): the adoption stops."""
ANNOTATION_MESSAGE = "olmv0.pivoter.io/adoption-message"
"""On the Resolution: the adoption's last message (what it waits for, what failed)."""
ANNOTATION_FAILED = "olmv0.pivoter.io/adoption-failed"
"""On the Subscription: why its adoption failed before OLM v0 let go (its Resolution is gone);
the adoption controller tries again :data:`RETRY_FAILED_SECONDS` after
:data:`ANNOTATION_FAILED_AT`."""
ANNOTATION_FAILED_AT = "olmv0.pivoter.io/adoption-failed-at"
ANNOTATION_PREFLIGHT_FAILING = "olmv0.pivoter.io/preflight-failing-since"
"""On the Resolution: when its pre-flight was first seen failing (unix seconds)."""
PREFLIGHT_GRACE_SECONDS = 30.0
"""How long a failing pre-flight is looked at again before the adoption gives up."""
RETRY_FAILED_SECONDS = 60.0
_STEP_HOOK: ContextVar[Callable[[str], None] | None] = ContextVar("step_hook", default=None)
OLM_LABELS = (LABEL_OWNER, LABEL_OWNER_NAMESPACE, LABEL_OWNER_KIND)


@dataclass(frozen=True)
class AdoptionProgress:
    """Where one adoption stands after a call to :func:`advance`."""

    step: str
    message: str
    subscription: str = ""
    """``<namespace>/<name>`` of the adopted Subscription ("" when unknown)."""

    @property
    def done(self) -> bool:
        """Finished, successfully or not."""
        return self.step in (ADOPTED, FAILED)


def start(
    kube: Kube,
    installed: InstalledOperator,
    name: str,
    dependencies: Sequence[InstalledOperator] = (),
) -> Object:
    """Create the paused Resolution that adopts ``installed`` and the ``dependencies`` OLM v0
    installed for it (:mod:`pivoter.olmv0.groups`), or return the existing one."""
    body = resolution_for(
        installed,
        name=name,
        adoption_step=PLANNING,
        object_names=object_names(kube, installed.installed_csv, installed.namespace),
        dependencies=dependencies,
        dependency_names={
            d.package: object_names(kube, d.installed_csv, d.namespace) for d in dependencies
        },
    )
    # A failure recorded by an earlier attempt is not this one's.
    cleared = {"metadata": {"annotations": {ANNOTATION_FAILED: None, ANNOTATION_FAILED_AT: None}}}
    with contextlib.suppress(NotFound):
        kube.merge_patch(SUBSCRIPTIONS, installed.name, cleared, installed.namespace)
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
        {
            "metadata": {
                "annotations": {
                    ANNOTATION_ADOPTION: step,
                    ANNOTATION_MESSAGE: message,
                    ANNOTATION_PREFLIGHT_FAILING: None,
                }
            }
        },
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
    csvs = sorted(m.csv for m in _members(res))
    resolution = Record.from_status(res.get("status")).resolution
    if resolution is not None and not resolution.ok:
        message = (
            f"no pivoter catalog offers the installed bundle {', '.join(csvs)}: "
            f"{resolved.get('message', '')}; nothing was changed (the Resolution is deleted)"
        )
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, message)
    selection = (res.get("status") or {}).get("selection") or []
    bundles = [s.get("bundle") for s in selection]
    if resolution is None or not selection:
        return AdoptionProgress(PLANNING, "waiting for the Resolution to resolve")
    if sorted(str(b) for b in bundles) != csvs:
        message = (
            f"the catalogs resolve to {', '.join(str(b) for b in bundles)}, not the installed "
            f"{', '.join(csvs)}; nothing was changed (the Resolution is deleted)"
        )
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, message)
    # Before the point of no return: the paused Resolution's plan pulled the bundle (with the
    # credentials OLM v0's CatalogSource and the cluster give), unpacked and converted it and
    # ran a server-side dry run of the takeover against the live objects, as the identity that
    # will install. Anything that fails there fails here, while OLM v0 still manages it all.
    objects = _preflight(res)
    if (
        objects is None
        or "pending" in objects
        or not ("problem" in objects or "restarts" in objects)
    ):
        waiting = (objects or {}).get("pending") or "the plan"
        return AdoptionProgress(
            PLANNING,
            f"checking {csv} before OLM v0 lets go (pull, unpack, convert, server-side dry run "
            f"of the takeover): waiting for {waiting}",
        )
    if "problem" in objects:
        # A problem may pass on its own (catalogs still loading after a restart resolve the
        # bundle from a catalog that cannot install it; a registry answering again): it is
        # looked at again for a while before the adoption gives up.
        failing = _failing_for(kube, res)
        if failing < PREFLIGHT_GRACE_SECONDS:
            return AdoptionProgress(
                PLANNING,
                f"{csv} cannot be taken over yet: {objects['problem']} (checked again for "
                f"{PREFLIGHT_GRACE_SECONDS - failing:.0f} s more before the adoption gives up; "
                "nothing was changed)",
            )
        message = (
            f"{csv} cannot be taken over: {objects['problem']}; nothing was changed: OLM v0 "
            "still manages the operator (the Resolution is deleted; fix the cause and adopt "
            "again)"
        )
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, message)
    refusal = _would_disturb(csv, objects)
    if refusal:
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
        return AdoptionProgress(FAILED, refusal)
    _record(kube, name, INSTALLING, f"checked: {objects.get('dryRun', '')}")
    return _install(kube, kube.get(RESOLUTIONS, name))


def _install(kube: Kube, res: Object) -> AdoptionProgress:
    name = res["metadata"]["name"]
    namespace, subscription = _subscription(res)
    members = _members(res)
    names = {m.subscription for m in members}
    for plan in kube.list(INSTALL_PLANS, namespace)[0]:
        owners = plan["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Subscription" and o.get("name") in names for o in owners):
            _delete(kube, INSTALL_PLANS, plan["metadata"]["name"], namespace)
    for member in members:
        _delete(kube, SUBSCRIPTIONS, member.subscription, namespace)
    if (res.get("spec") or {}).get("paused"):
        csv = ", ".join(m.csv for m in members)
        seen = quiet.observe(
            kube,
            [m.csv for m in members],
            namespace,
            _annotations(res).get(quiet.ANNOTATION_QUIET),
        )
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
        renamed = {m.package: object_names(kube, m.csv, namespace) for m in members}
        spec = {"paused": None, "packages": _renamed(res["spec"]["packages"], renamed)}
        res = kube.merge_patch(RESOLUTIONS, name, {"spec": spec})
    children = Children(kube, InputRef("Resolution", name)).list()
    states = {package: state_of(bd) for package, bd in children.items()}
    pivot = Record.from_status(res.get("status")).pivot
    if pivot is not None and pivot.phase in (Phase.FAILED, Phase.ROLLED_BACK):
        progressing = _condition(res, TYPE_PROGRESSING)
        return AdoptionProgress(
            INSTALLING,
            f"the pivot that adopts failed: {progressing.get('message', '')}; OLM v0's CSV still "
            "runs the operator. Fix the cause and retry (annotation pivoter.io/retry-now on "
            f"Resolution {name}), or give the operator back to OLM v0: pivoter adopt "
            f"--subscription {namespace}/{subscription} --undo (the Subscription is recorded on "
            "the Resolution)",
        )
    if not children or any(s != ChildState.READY for s, _, _ in states.values()):
        detail = "; ".join(f"{p}: {s.value} {m}" for p, (s, _, m) in states.items())
        return AdoptionProgress(
            INSTALLING, f"waiting for the child to be installed and healthy {detail}"
        )
    _record(kube, name, RELEASING)
    return _release(kube, kube.get(RESOLUTIONS, name))


def _failing_for(kube: Kube, res: Object, now: Callable[[], float] = time.time) -> float:
    """Seconds the pre-flight has been failing (recorded on the Resolution the first time, so a
    restarted daemon keeps counting)."""
    current = now()
    text = _annotations(res).get(ANNOTATION_PREFLIGHT_FAILING, "")
    try:
        since = float(text)
    except ValueError:
        since = current + 1.0
    if since > current:
        patch = {"metadata": {"annotations": {ANNOTATION_PREFLIGHT_FAILING: f"{current:.3f}"}}}
        with contextlib.suppress(NotFound):
            kube.merge_patch(RESOLUTIONS, res["metadata"]["name"], patch)
        return 0.0
    return current - since


def _would_disturb(csv: str, objects: dict[str, Any]) -> str:
    """Why the takeover the dry run checked would disturb the running operator ("" when it
    would not): it would replace pods (a workload's pod template would change), or an object it
    takes over could not be read to compare. A takeover changes ownership, never what runs."""
    restarts = [str(r) for r in objects.get("restarts") or []]
    unread = [str(u) for u in objects.get("unread") or []]
    if not restarts and not unread:
        return ""
    fields = {
        f"{c.get('kind')} {c.get('name')}": c.get("fields") or []
        for c in objects.get("changes") or []
        if c.get("kind") in ("Deployment", "StatefulSet", "DaemonSet")
    }
    parts = []
    if restarts:
        changed = "; ".join(
            f"{what}: {', '.join(str(f) for f in paths[:5])}" for what, paths in fields.items()
        )
        parts.append(
            f"taking {csv} over would replace the pods of {', '.join(restarts)} (their pod "
            f"template would change: {changed})"
        )
    if unread:
        parts.append(
            f"the objects {', '.join(unread)} could not be read to compare with what pivoter "
            "would apply (grant the installing identity get on them)"
        )
    return (
        "; ".join(parts) + "; nothing was changed: OLM v0 still manages the operator (the "
        "Resolution is deleted)"
    )


def _preflight(res: Object) -> dict[str, Any] | None:
    """The objects section of the paused Resolution's plan for its current selection (None
    while it has none): ``pending``, ``problem``, or the objects and the dry run's summary."""
    status = res.get("status") or {}
    plan = status.get("pendingPlan") or {}
    objects = plan.get("objects")
    if not isinstance(objects, dict):
        return None
    if plan.get("selectionHash") != status.get("selectionHash"):
        return None  # a plan for an earlier selection
    return objects


@dataclass(frozen=True)
class _Member:
    """One Subscription of an adoption: the one asked for, or a dependency taken with it."""

    subscription: str
    csv: str
    package: str


def _members(res: Object) -> list[_Member]:
    """The adopted Subscription and its dependencies' (:mod:`pivoter.olmv0.groups`)."""
    recorded = recorded_subscription(res)
    primary = _Member(
        str(recorded.get("name") or ""),
        _annotations(res).get(ANNOTATION_CSV, ""),
        str((recorded.get("spec") or {}).get("name") or ""),
    )
    return [primary] + [
        _Member(str(d["name"]), str(d["csv"]), str(d["package"]))
        for d in recorded_dependencies(res)
    ]


def _renamed(
    packages: list[dict[str, Any]], names: Mapping[str, Mapping[str, str]]
) -> list[dict[str, Any]]:
    """The adopted packages with ``objectNames`` read again now that OLM v0 is quiet (``names``:
    by package; :func:`pivoter.olmv0.names.object_names` says why once at the start is not
    enough)."""
    renamed = []
    for package in packages:
        config = {k: v for k, v in (package.get("config") or {}).items() if k != "objectNames"}
        mine = names.get(str(package.get("name") or ""))
        if mine:
            config["objectNames"] = dict(mine)
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
    csvs = [m.csv for m in _members(res)]
    for bd in Children(kube, InputRef("Resolution", name)).list().values():
        for ref in inventory_of(bd.get("status")):
            _strip(kube, ref)
    # Background: what OLM v0 made for itself and pivoter did not take over (its OperatorCondition
    # and the Role for it, the Role that reads the certificate Secret, namespaced copies of roles
    # pivoter holds cluster-wide) goes with the CSV; what pivoter took over no longer names it.
    remaining = []
    for csv in csvs:
        if not _delete(kube, CSVS, csv, namespace):
            remaining.append(csv)
        _delete(kube, OPERATOR_CONDITIONS, csv, namespace)
    if remaining:
        return AdoptionProgress(
            RELEASING, f"waiting for OLM v0 to let go of CSV {', '.join(remaining)}"
        )
    res = kube.merge_patch(
        RESOLUTIONS,
        name,
        {
            "metadata": {
                "annotations": {
                    ANNOTATION_ADOPTION: ADOPTED,
                    ANNOTATION_MESSAGE: "",
                    ANNOTATION_TAKEOVER: None,
                }
            },
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
    if annotations.get(ANNOTATION_UNDO):
        # pivoter adopt --undo took over: the adoption goes no further.
        return AdoptionProgress(FAILED, f"Resolution {name} is being handed back to OLM v0")
    if step == ADOPTED:
        return AdoptionProgress(ADOPTED, "adopted")
    action = STEPS.get(step)
    if action is None:
        return AdoptionProgress(FAILED, f"Resolution {name} records no adoption step")
    namespace, subscription = _subscription(res)
    progress = action(kube, res)
    progress = AdoptionProgress(progress.step, progress.message, f"{namespace}/{subscription}")
    if progress.step == FAILED:
        _failed_on_subscription(kube, namespace, subscription, progress.message)
    elif progress.step != ADOPTED:
        _note(kube, name, progress.message)
    return progress


def _note(kube: Kube, name: str, message: str) -> None:
    """Keep the adoption's last message on its Resolution (``kubectl describe`` shows it)."""
    try:
        current = _annotations(kube.get(RESOLUTIONS, name)).get(ANNOTATION_MESSAGE, "")
    except NotFound:
        return
    if current != message:
        with contextlib.suppress(NotFound):
            kube.merge_patch(
                RESOLUTIONS, name, {"metadata": {"annotations": {ANNOTATION_MESSAGE: message}}}
            )


def _failed_on_subscription(kube: Kube, namespace: str, name: str, message: str) -> None:
    """An adoption that failed before the point of no return deleted its Resolution: the
    Subscription (still OLM v0's) says why, and when (:data:`ANNOTATION_FAILED`)."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = {"metadata": {"annotations": {ANNOTATION_FAILED: message, ANNOTATION_FAILED_AT: now}}}
    with contextlib.suppress(NotFound):
        kube.merge_patch(SUBSCRIPTIONS, name, patch, namespace)
