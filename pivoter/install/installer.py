"""Apply pivoter's manifests and wait until what they run is ready: ``pivoter install``.

Nothing is applied until everything has been asked: the user's rights (:mod:`.rights`), then a
server-side dry run of every object that can be dry-run now (a namespaced object whose namespace
does not exist yet cannot be). Then the CRDs are applied and waited for (``Established``), then
``deploy/``'s objects in order, server-side with the field manager ``pivoter-install`` (forced:
the install owns these objects, also when an earlier install used ``kubectl apply``). A Job's pod
template cannot change; an existing Job of another version is deleted and made again (the
webhook certificate Job keeps the Secret it made, docs/install.md). Last, the rollout of the
Deployment and the Job are waited for, with progress as it happens.

An upgrade is the same command with a newer CLI. A downgrade is refused: an older daemon may not
read what a newer one wrote (docs/install.md says how to go back on purpose).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis.resources import CRDS, NAMESPACES
from pivoter.install.manifests import LABEL_VERSION, Manifests
from pivoter.kube import APPLY_PATCH, Invalid, Kube, KubeError, NotFound, Resource

__all__ = [
    "FIELD_MANAGER",
    "AppliedObjects",
    "InstallError",
    "Progress",
    "apply_manifests",
    "dry_run",
    "installed_version",
    "wait_ready",
]

FIELD_MANAGER = "pivoter-install"
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", True)
JOBS = Resource("batch/v1", "Job", "jobs", True)

Progress = Callable[[str], None]
"""Where progress lines go (the CLI: stderr)."""


class InstallError(Exception):
    """The install cannot go on; the message says what to do."""


@dataclass
class AppliedObjects:
    """What one apply did: the objects created, changed and left as they were, and what the API
    server warned about."""

    created: list[str] = field(default_factory=list)
    configured: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{obj.get('kind')} {namespace + '/' if namespace else ''}{metadata.get('name')}"


def _apply(kube: Kube, obj: Mapping[str, Any], *, dry_run: bool = False) -> tuple[Any, list[str]]:
    metadata = obj.get("metadata") or {}
    resource = kube.resource(str(obj["apiVersion"]), str(obj["kind"]))
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    query += [("dryRun", "All")] if dry_run else []
    response = kube.send(
        "PATCH",
        resource.path(metadata.get("namespace"), metadata["name"]),
        query=query,
        body=dict(obj),
        content_type=APPLY_PATCH,
    )
    return response, response.warnings


def installed_version(kube: Kube, manifests: Manifests) -> str | None:
    """The version label of the installed Deployment (None: pivoter is not installed)."""
    for obj in manifests.components:
        if obj.get("kind") == "Deployment":
            metadata = obj["metadata"]
            try:
                live = kube.get(DEPLOYMENTS, metadata["name"], metadata.get("namespace"))
            except NotFound:
                return None
            labels = (live.get("metadata") or {}).get("labels") or {}
            return str(labels.get(LABEL_VERSION) or "unknown")
    return None


def _existing_namespaces(kube: Kube, manifests: Manifests) -> set[str]:
    names = {
        str(o["metadata"]["namespace"])
        for o in manifests.components
        if (o.get("metadata") or {}).get("namespace")
    }
    found = set()
    for name in names:
        try:
            kube.get(NAMESPACES, name)
            found.add(name)
        except NotFound:
            pass
    return found


def dry_run(kube: Kube, manifests: Manifests) -> list[str]:
    """Server-side dry runs of every object that can be dry-run before the CRDs and namespaces
    exist; return the problems (empty: none found)."""
    namespaces = _existing_namespaces(kube, manifests)
    problems = []
    for obj in manifests.all():
        namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace and namespace not in namespaces:
            continue
        try:
            _apply(kube, obj, dry_run=True)
        except Invalid as exc:
            if obj.get("kind") == "Job":
                continue  # an existing Job of another version: replaced, see _apply_job
            problems.append(f"{_name(obj)}: {exc}")
        except KubeError as exc:
            problems.append(f"{_name(obj)}: {exc}")
    return problems


def _wait(
    what: str,
    check: Callable[[], str | None],
    *,
    deadline: float,
    progress: Progress,
    interval: float = 1.0,
) -> None:
    """Poll ``check`` (None: done; else a line saying where it is) until done or ``deadline``;
    print each new line."""
    last = ""
    while True:
        try:
            state = check()
        except KubeError as exc:
            state = f"{what}: {exc}"
        if state is None:
            progress(f"{what}: ready")
            return
        if state != last:
            progress(state)
            last = state
        if time.monotonic() > deadline:
            raise InstallError(f"timed out waiting for {what}: {state}")
        time.sleep(interval)


def _established(kube: Kube, name: str) -> str | None:
    crd = kube.get(CRDS, name)
    for condition in (crd.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Established" and condition.get("status") == "True":
            return None
    return f"CustomResourceDefinition {name}: not established yet"


def _apply_job(
    kube: Kube, obj: Mapping[str, Any], deadline: float, progress: Progress
) -> tuple[Any, list[str]]:
    metadata = obj["metadata"]
    try:
        return _apply(kube, obj)
    except Invalid:
        # The pod template of a Job is immutable: an earlier version's Job is made again.
        progress(f"{_name(obj)}: made again for this version (a Job's pod template is immutable)")
        with contextlib.suppress(NotFound):
            kube.delete(JOBS, metadata["name"], metadata["namespace"], propagation="Foreground")

        def gone() -> str | None:
            try:
                kube.get(JOBS, metadata["name"], metadata["namespace"])
            except NotFound:
                return None
            return f"{_name(obj)}: waiting for the previous Job to be deleted"

        _wait(_name(obj) + " deleted", gone, deadline=deadline, progress=progress)
        return _apply(kube, obj)


def apply_manifests(
    kube: Kube, manifests: Manifests, *, progress: Progress, timeout: float
) -> AppliedObjects:
    """Apply the CRDs, wait for them, then the components. The caller has checked rights and
    dry runs first."""
    deadline = time.monotonic() + timeout
    result = AppliedObjects()

    def record(
        obj: Mapping[str, Any], before: str | None, response: Any, warnings: list[str]
    ) -> None:
        name = _name(obj)
        after = str((response.body.get("metadata") or {}).get("resourceVersion") or "")
        if before is None:
            result.created.append(name)
        elif before == after:
            result.unchanged.append(name)
        else:
            result.configured.append(name)
        result.warnings.extend(f"{name}: {w}" for w in warnings)
        state = "created" if before is None else "unchanged" if before == after else "configured"
        progress(f"{name} {state}")

    def version_before(obj: Mapping[str, Any]) -> str | None:
        metadata = obj["metadata"]
        resource = kube.resource(str(obj["apiVersion"]), str(obj["kind"]))
        try:
            live = kube.get(resource, metadata["name"], metadata.get("namespace"))
        except NotFound:
            return None
        return str((live.get("metadata") or {}).get("resourceVersion") or "")

    for crd in manifests.crds:
        before = version_before(crd)
        response, warnings = _apply(kube, crd)
        record(crd, before, response, warnings)
    for crd in manifests.crds:
        name = crd["metadata"]["name"]
        _wait(
            f"CustomResourceDefinition {name}",
            functools.partial(_established, kube, name),
            deadline=deadline,
            progress=lambda _line: None,
        )
    kube.forget()  # the new kinds are served now
    for obj in manifests.components:
        before = version_before(obj)
        if obj.get("kind") == "Job":
            response, warnings = _apply_job(kube, obj, deadline, progress)
        else:
            response, warnings = _apply(kube, obj)
        record(obj, before, response, warnings)
    wait_ready(kube, manifests, progress=progress, deadline=deadline)
    return result


def _deployment_state(kube: Kube, obj: Mapping[str, Any], image: str) -> str | None:
    metadata = obj["metadata"]
    live = kube.get(DEPLOYMENTS, metadata["name"], metadata["namespace"])
    spec, status = live.get("spec") or {}, live.get("status") or {}
    want = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    total = int(status.get("replicas") or 0)
    observed = int(status.get("observedGeneration") or 0)
    name = _name(obj)
    if observed < int(live["metadata"].get("generation") or 0):
        return f"{name}: waiting for the rollout to start"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("reason") == (
            "ProgressDeadlineExceeded"
        ):
            raise InstallError(
                f"{name} is not progressing: {condition.get('message')} (kubectl -n "
                f"{metadata['namespace']} describe pods -l app.kubernetes.io/name=pivoter)"
            )
    if updated == want and ready >= want and available >= want and total == want:
        return None
    return f"{name}: {ready}/{want} ready, {updated}/{want} at {image}"


def _job_state(kube: Kube, obj: Mapping[str, Any]) -> str | None:
    metadata = obj["metadata"]
    live = kube.get(JOBS, metadata["name"], metadata["namespace"])
    status = live.get("status") or {}
    if int(status.get("succeeded") or 0) > 0:
        return None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            raise InstallError(
                f"{_name(obj)} failed: {condition.get('message')} (kubectl -n "
                f"{metadata['namespace']} logs job/{metadata['name']})"
            )
    return f"{_name(obj)}: running ({int(status.get('failed') or 0)} failed attempts)"


def wait_ready(kube: Kube, manifests: Manifests, *, progress: Progress, deadline: float) -> None:
    """Wait until the Job has succeeded and the Deployment has rolled out, or raise."""
    for obj in manifests.components:
        if obj.get("kind") == "Job":
            _wait(
                _name(obj),
                functools.partial(_job_state, kube, obj),
                deadline=deadline,
                progress=progress,
            )
    for obj in manifests.components:
        if obj.get("kind") == "Deployment":
            _wait(
                _name(obj),
                functools.partial(_deployment_state, kube, obj, manifests.image),
                deadline=deadline,
                progress=progress,
            )
