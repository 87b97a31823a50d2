"""Whether OLM v0 has stopped writing what it installed for a CSV, observed over a window.

A CSV is ``Succeeded`` and its InstallPlan ``Complete`` while OLM v0's catalog operator may still
be executing that InstallPlan's steps once more from a stale informer copy (seen with OLM v0.46:
a sync that started before the adoption deletes Services to re-create them, re-labels
ClusterRoleBindings and puts its ownerReferences back, seconds after the InstallPlan is gone).
Deleting the InstallPlan stops new syncs, not one under way; an adoption that took the objects
over then would have them re-marked by OLM v0 and removed with the CSV.

So after the InstallPlans and the Subscription are deleted, the handover waits until the
objects OLM v0 labels as the CSV's (``olm.owner=<csv>``) keep the same uids and
resourceVersions for :data:`QUIET_SECONDS`. The observation is recorded on the adoption's
Resolution (:data:`ANNOTATION_QUIET`: a digest and when it was first seen), so a restarted daemon
goes on measuring the same window.

The hand-back (:mod:`pivoter.olmv0.undo`) waits out the same window once it has marked the
objects as the CSV's again (:func:`window`): such a late sync also resets every Role and
RoleBinding of the bundle to its manifest (a two-way patch), taking that mark off again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.olmv0.resources import LABEL_OWNER, OWNED_CLUSTER, OWNED_NAMESPACED

__all__ = ["ANNOTATION_QUIET", "QUIET_SECONDS", "Quiet", "digest_of", "observe", "window"]

ANNOTATION_QUIET = "olmv0.pivoter.io/olm-quiet-since"
"""``<digest> <unix seconds>``: what OLM v0's objects looked like, and since when."""
QUIET_SECONDS = 15.0
"""How long OLM v0's objects must stay unchanged (one InstallPlan sync writes every few seconds,
even on a loaded two-core machine)."""


@dataclass(frozen=True)
class Quiet:
    """The outcome of one observation: ``done`` once the window has passed unchanged."""

    done: bool
    annotation: str
    """What to record in :data:`ANNOTATION_QUIET` next."""
    waited: float
    """Seconds the objects have been unchanged."""


def _digest(kube: Kube, csvs: Sequence[str], namespace: str) -> str:
    names = sorted(set(csvs))
    selector = (
        f"{LABEL_OWNER}={names[0]}" if len(names) == 1 else f"{LABEL_OWNER} in ({','.join(names)})"
    )
    seen: list[str] = []
    for resource in (*OWNED_NAMESPACED, *OWNED_CLUSTER):
        try:
            items, _ = kube.list(
                resource, namespace if resource.namespaced else None, label_selector=selector
            )
        except NotFound:
            continue
        seen.extend(_identity(resource, o) for o in items)
    return digest_of(seen)


def digest_of(lines: Sequence[str]) -> str:
    """One digest of what was seen of some objects, a line each (in any order)."""
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:32]


def _identity(resource: Resource, obj: Object) -> str:
    """Changes to what OLM v0 writes; for objects with a generation (Deployments) not their
    status, which moves with the operator's pods, not with OLM v0."""
    meta = obj["metadata"]
    where = f"{meta.get('namespace', '')}/{meta['name']}"
    if "generation" in meta:
        labels = sorted((meta.get("labels") or {}).items())
        owners = sorted(str(o.get("uid")) for o in meta.get("ownerReferences") or [])
        version = f"g{meta['generation']} {labels} {owners}"
    else:
        version = str(meta.get("resourceVersion"))
    return f"{resource.kind} {where} {meta.get('uid')} {version}"


def observe(
    kube: Kube,
    csv: str | Sequence[str],
    namespace: str,
    recorded: str | None,
    now: Callable[[], float] = time.time,
) -> Quiet:
    """Compare OLM v0's objects for ``csv`` (one CSV, or the CSVs of an adopted group) with the
    ``recorded`` observation (the value of
    :data:`ANNOTATION_QUIET`); the returned annotation is what to record next."""
    digest = _digest(kube, [csv] if isinstance(csv, str) else list(csv), namespace)
    return window(digest, recorded, now)


def window(digest: str, recorded: str | None, now: Callable[[], float] = time.time) -> Quiet:
    """Compare what is seen now (``digest``) with the ``recorded`` observation (``<digest> <unix
    seconds>``, None to start a new window); the returned annotation is what to record next."""
    current = now()
    previous, _, since_text = (recorded or "").partition(" ")
    try:
        since = float(since_text)
    except ValueError:
        previous = ""
    else:
        if since > current + QUIET_SECONDS:  # recorded by a daemon with a clock far ahead
            previous = ""
    if previous != digest:
        return Quiet(False, f"{digest} {current:.3f}", 0.0)
    waited = current - since
    return Quiet(waited >= QUIET_SECONDS, recorded or "", waited)
