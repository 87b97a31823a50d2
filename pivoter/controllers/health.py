"""Health of installed objects, per kind, and the BundleDeployment's ``Healthy`` condition.

:func:`check` reads each installed object and returns the ones that are not healthy with the
reason; :func:`healthy_condition` turns that into ``Healthy``, whose message names each failing
object (``Deployment ns/name: ...``). The rules follow kstatus: workloads rolled out and
available, CRDs Established, APIServices Available, and any object with a ``Ready`` condition
Ready. Objects without a notion of health are healthy. Called by the BundleDeployment controller
on every reconcile, reading the shared informer caches of managed objects when it has them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, Condition, find
from pivoter.controllers.reporting import where
from pivoter.kube import Kube, KubeError, NotFound
from provisioners.apply.objects import ObjectRef

__all__ = ["Read", "check", "healthy_condition", "object_health"]

MAX_NAMED = 10
"""How many failing objects the ``Healthy`` message names (the rest are counted)."""

Read = Callable[[ObjectRef], Mapping[str, Any] | None]
"""Answers an object from a cache when it can (None: not there, send a GET)."""


def _condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return find((obj.get("status") or {}).get("conditions"), type_)


def _generation_seen(obj: Mapping[str, Any]) -> str | None:
    generation = (obj.get("metadata") or {}).get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if generation is not None and observed is not None and observed < generation:
        return f"the controller has not yet seen generation {generation} (at {observed})"
    return None


def _deployment(obj: Mapping[str, Any]) -> str | None:
    stale = _generation_seen(obj)
    if stale:
        return stale
    status = obj.get("status") or {}
    wanted = int((obj.get("spec") or {}).get("replicas", 1))
    updated = int(status.get("updatedReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    if updated < wanted:
        return f"rollout in progress: {updated} of {wanted} replicas updated"
    if available < wanted:
        return f"{available} of {wanted} replicas available"
    condition = _condition(obj, "Available")
    if condition is not None and condition.get("status") != "True":
        return f"not Available: {condition.get('message') or condition.get('reason')}"
    return None


def _replicas(obj: Mapping[str, Any], desired_field: str) -> str | None:
    stale = _generation_seen(obj)
    if stale:
        return stale
    status = obj.get("status") or {}
    wanted = int(status.get(desired_field) or (obj.get("spec") or {}).get("replicas", 1))
    ready = int(status.get("numberReady") or status.get("readyReplicas") or 0)
    return f"{ready} of {wanted} pods ready" if ready < wanted else None


def _true_condition(obj: Mapping[str, Any], type_: str) -> str | None:
    condition = _condition(obj, type_)
    if condition is None:
        return f"no {type_} condition yet"
    if condition.get("status") != "True":
        return f"not {type_}: {condition.get('message') or condition.get('reason')}"
    return None


def object_health(obj: Mapping[str, Any]) -> str | None:
    """Why ``obj`` is unhealthy, or None when it is healthy (or has no notion of health)."""
    kind = obj.get("kind")
    if kind == "Deployment":
        return _deployment(obj)
    if kind == "StatefulSet":
        return _replicas(obj, "replicas")
    if kind == "DaemonSet":
        return _replicas(obj, "desiredNumberScheduled")
    if kind == "CustomResourceDefinition":
        return _true_condition(obj, "Established")
    if kind == "APIService":
        return _true_condition(obj, "Available")
    if _condition(obj, "Ready") is not None:
        return _true_condition(obj, "Ready")
    return None


def check(
    kube: Kube, refs: Iterable[ObjectRef], *, read: Read | None = None
) -> list[tuple[ObjectRef, str]]:
    """Read every object of ``refs`` and return those that are unhealthy, with the reason.

    ``read`` answers from a cache (the shared informers) when it can; None sends a GET.
    """
    failing: list[tuple[ObjectRef, str]] = []
    for ref in refs:
        cached = read(ref) if read is not None else None
        if cached is not None:
            reason = object_health(cached)
            if reason:
                failing.append((ref, reason))
            continue
        try:
            resource = kube.resource(ref.api_version, ref.kind)
            obj = kube.get(resource, ref.name, ref.namespace or None)
        except NotFound:
            failing.append((ref, "not found"))
            continue
        except KubeError as exc:
            failing.append((ref, f"cannot be read: {exc}"))
            continue
        reason = object_health(obj)
        if reason:
            failing.append((ref, reason))
    return failing


def healthy_condition(
    kube: Kube, refs: Sequence[ObjectRef], *, read: Read | None = None
) -> tuple[Condition, list[tuple[ObjectRef, str]]]:
    """The ``Healthy`` condition of the installed objects ``refs``, and the failing ones (the
    caller looks again sooner while some fail)."""
    failing = check(kube, refs, read=read)
    if not failing:
        message = f"All {len(refs)} installed objects are healthy"
        return Condition(rukpak.TYPE_HEALTHY, TRUE, rukpak.REASON_HEALTHY, message), failing
    named = "; ".join(f"{ref.kind} {where(ref)}: {why}" for ref, why in failing[:MAX_NAMED])
    more = len(failing) - MAX_NAMED
    message = named + (f" (and {more} more)" if more > 0 else "")
    return Condition(rukpak.TYPE_HEALTHY, FALSE, rukpak.REASON_UNHEALTHY, message), failing
