"""Drift: which installed objects no longer match what pivoter applied, and how.

The BundleDeployment controller calls :func:`detect` with the objects it would apply. For each
one it reads the live object; if it is gone or being deleted that is drift (``deleted``).
Otherwise it asks the API server what a server-side apply of the desired object would store (a
dry run with the same field manager and ``force``, exactly as the real apply) and compares that
with the live object: a field
pivoter manages that someone edited comes back in the dry run, so any difference is drift, named
by its field paths (``spec.replicas``). Fields pivoter does not manage (another manager's
annotations, status, defaults) are the same on both sides and are not drift.

Objects whose :func:`fingerprint` (everything but status and server-written metadata) equals the
one recorded the last time they matched are not compared again (``known``): status updates of a
workload are not drift, and the steady state costs one read per object.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.kube import APPLY_PATCH, KubeAPI, NotFound
from provisioners.apply.objects import ObjectRef, ref_of, with_owner_labels

__all__ = ["Drift", "DriftReport", "detect", "differences", "fingerprint"]

_SERVER_FIELDS = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")
MAX_PATHS = 5


@dataclass(frozen=True, slots=True)
class Drift:
    """One drifted object and what happened to it (``deleted`` or the changed fields)."""

    ref: ObjectRef
    what: str
    finalizing: bool = False
    """Deleted, but its finalizers still run: re-creating it must wait until it is gone."""

    def __str__(self) -> str:
        where = f"{self.ref.namespace}/{self.ref.name}" if self.ref.namespace else self.ref.name
        return f"{self.ref.kind} {where} {self.what}"


@dataclass(slots=True)
class DriftReport:
    """The drifted objects, and the fingerprints of the objects that matched."""

    drifts: list[Drift] = field(default_factory=list)
    matching: dict[ObjectRef, str] = field(default_factory=dict)

    @property
    def finalizing(self) -> bool:
        """Whether an object is still being deleted (apply once it is gone)."""
        return any(d.finalizing for d in self.drifts)

    def summary(self, limit: int = 10) -> str:
        """``Kind ns/name what; ...`` for messages, with a count past ``limit``."""
        text = "; ".join(str(d) for d in self.drifts[:limit])
        more = len(self.drifts) - limit
        return text + (f" (and {more} more)" if more > 0 else "")


def detect(
    api: KubeAPI,
    objects: Iterable[Mapping[str, Any]],
    *,
    owner_kind: str,
    owner_name: str,
    field_manager: str,
    known: Mapping[ObjectRef, str] | None = None,
) -> DriftReport:
    """Compare every desired object with the cluster; see the module docstring."""
    report = DriftReport()
    for desired in objects:
        ref = ref_of(desired)
        try:
            resource = api.resource(ref.api_version, ref.kind)
        except NotFound:
            report.drifts.append(Drift(ref, f"deleted (kind {ref.kind} is no longer served)"))
            continue
        namespace = ref.namespace if resource.namespaced else ""
        ref = ObjectRef(ref.api_version, ref.kind, namespace, ref.name)
        path = resource.path(namespace, ref.name)
        try:
            live = api.request("GET", path)
        except NotFound:
            report.drifts.append(Drift(ref, "deleted"))
            continue
        if live.get("metadata", {}).get("deletionTimestamp"):
            # Its finalizers still run; once it is gone the watch queues another reconcile.
            report.drifts.append(Drift(ref, "deleted (still finalizing)", finalizing=True))
            continue
        version = fingerprint(live)
        if known is not None and known.get(ref) == version:
            report.matching[ref] = version
            continue
        body = _apply_body(desired, owner_kind, owner_name, namespace)
        try:
            dry = api.request(
                "PATCH",
                path,
                query=[("fieldManager", field_manager), ("force", "true"), ("dryRun", "All")],
                body=body,
                content_type=APPLY_PATCH,
            )
        except NotFound:
            report.drifts.append(Drift(ref, "deleted"))
            continue
        paths = differences(_normalized(live), _normalized(dry))
        if paths:
            shown = ", ".join(paths[:MAX_PATHS]) + (" ..." if len(paths) > MAX_PATHS else "")
            report.drifts.append(Drift(ref, f"changed ({shown})"))
        else:
            report.matching[ref] = version
    return report


def _apply_body(
    desired: Mapping[str, Any], owner_kind: str, owner_name: str, namespace: str
) -> dict[str, Any]:
    """The body the applier sends for ``desired`` (owner labels, namespace, no server fields)."""
    body = with_owner_labels(dict(desired), owner_kind, owner_name)
    metadata = dict(body["metadata"])
    if namespace:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    for key in _SERVER_FIELDS:
        metadata.pop(key, None)
    body["metadata"] = metadata
    body.pop("status", None)
    return body


def fingerprint(obj: Mapping[str, Any]) -> str:
    """A digest of ``obj`` without status and server-written metadata: it changes when someone
    edits the object, not when a controller reports status."""
    canonical = json.dumps(_normalized(obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_FIELDS
    }
    return out


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Field paths (``spec.replicas``, ``data.k``, ``spec.ports[0]``) where ``old`` and ``new``
    differ, outermost first; an added or removed field is named by its own path."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        paths: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                paths.append(sub)
            else:
                paths.extend(differences(old[key], new[key], sub))
        return paths
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        paths = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            paths.extend(differences(a, b, f"{path}[{index}]"))
        return paths
    return [] if old == new else [path or "."]
