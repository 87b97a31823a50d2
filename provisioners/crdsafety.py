"""CRD upgrade safety: refuse a new CRD that would lose or break existing custom resources.

Before an upgrade applies a CRD that already exists, the BundleDeployment controller calls
:func:`check_crd_upgrade` (or :func:`ensure_safe_crd_upgrade`) with the live CRD and the new one.
Refused, each with the field named:

- a change of ``spec.scope``;
- dropping a version still listed in ``status.storedVersions`` (objects may be stored in it);
- no longer serving a version while objects exist (asked through a callback);
- narrowing a schema of a version kept: a removed field, a newly required field, an enum that
  lost values, a changed type, or a tighter bound (maximum, maxLength, minItems, ...).

Like rukpak's crdvalidator and kapp's crdupgradesafety; the opt-out is the annotation
``core.rukpak.io/safe-crd-upgrade-validation: "false"`` on the new CRD or ``disabled=True``.
Once objects have been migrated to the new storage version, :func:`stored_versions_after` gives
the ``status.storedVersions`` to write so that a version can be removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from provisioners.errors import ProvisionerError

OPT_OUT_ANNOTATION = "core.rukpak.io/safe-crd-upgrade-validation"

HasObjects = Callable[[str], bool]
"""Whether custom resources exist when read through the given version."""

_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")


@dataclass(frozen=True)
class CRDChangeProblem:
    """One unsafe change: the version (if any), the field path and what is wrong."""

    field: str
    message: str
    version: str = ""

    def __str__(self) -> str:
        where = f"version {self.version}: " if self.version else ""
        return f"{where}{self.field}: {self.message}"


class UnsafeCRDChange(ProvisionerError):
    """The new CRD would break or lose existing custom resources; the message lists why."""

    def __init__(self, crd: str, problems: list[CRDChangeProblem]) -> None:
        super().__init__(
            f"CustomResourceDefinition {crd}: unsafe upgrade refused: "
            + "; ".join(str(p) for p in problems)
            + f' (to force it, annotate the CRD {OPT_OUT_ANNOTATION}: "false")'
        )
        self.crd = crd
        self.problems = problems


def _versions(crd: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(v.get("name")): v for v in crd.get("spec", {}).get("versions") or []}


def _storage_version(crd: Mapping[str, Any]) -> str:
    for name, version in _versions(crd).items():
        if version.get("storage"):
            return name
    return ""


def opted_out(crd: Mapping[str, Any]) -> bool:
    """Whether the CRD carries the opt-out annotation."""
    annotations = crd.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(OPT_OUT_ANNOTATION, "")).lower() == "false"


def check_crd_upgrade(
    existing: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    has_objects: HasObjects | None = None,
    disabled: bool = False,
) -> list[CRDChangeProblem]:
    """Every unsafe difference from ``existing`` (live, with status) to ``new``.

    Without ``has_objects`` a version that stops being served is assumed to have objects.
    """
    if disabled or opted_out(new):
        return []
    problems: list[CRDChangeProblem] = []
    old_scope = existing.get("spec", {}).get("scope")
    new_scope = new.get("spec", {}).get("scope")
    if old_scope != new_scope:
        problems.append(CRDChangeProblem("spec.scope", f"changed from {old_scope} to {new_scope}"))
    old_versions, new_versions = _versions(existing), _versions(new)
    stored = existing.get("status", {}).get("storedVersions") or []
    for name in stored:
        if name not in new_versions:
            problems.append(
                CRDChangeProblem(
                    "spec.versions",
                    f"drops version {name}, still in status.storedVersions {stored}: objects may "
                    f"be stored in it; migrate them to the new storage version and update "
                    "status.storedVersions first",
                    version=name,
                )
            )
    for name, old in old_versions.items():
        if not old.get("served"):
            continue
        if new_versions.get(name, {}).get("served"):
            continue
        if name in stored and name not in new_versions:
            continue  # reported above
        if has_objects is None or has_objects(name):
            known = "objects exist" if has_objects else "objects may exist"
            problems.append(
                CRDChangeProblem(
                    "spec.versions",
                    f"stops serving version {name} while {known}; clients using it would break",
                    version=name,
                )
            )
    for name, old in old_versions.items():
        kept = new_versions.get(name)
        if kept is None:
            continue
        old_schema = (old.get("schema") or {}).get("openAPIV3Schema")
        new_schema = (kept.get("schema") or {}).get("openAPIV3Schema")
        if old_schema is None:
            continue  # nothing was validated before, nothing can be narrowed
        if new_schema is None:
            continue  # no schema now accepts everything
        _compare(old_schema, new_schema, "", name, problems)
    return problems


def ensure_safe_crd_upgrade(
    existing: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    has_objects: HasObjects | None = None,
    disabled: bool = False,
) -> None:
    """Raise :class:`UnsafeCRDChange` if :func:`check_crd_upgrade` finds anything."""
    problems = check_crd_upgrade(existing, new, has_objects=has_objects, disabled=disabled)
    if problems:
        name = str(new.get("metadata", {}).get("name") or existing.get("metadata", {}).get("name"))
        raise UnsafeCRDChange(name, problems)


def stored_versions_after(existing: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``status.storedVersions`` once every object is rewritten in ``new``'s storage version.

    Versions the new CRD no longer has are dropped and the new storage version is listed, so the
    API server accepts removing the old version from ``spec.versions``.
    """
    new_versions = _versions(new)
    storage = _storage_version(new)
    result = [
        v for v in existing.get("status", {}).get("storedVersions") or [] if v in new_versions
    ]
    if storage and storage not in result:
        result.append(storage)
    return result


def _type_of(schema: Mapping[str, Any]) -> str | None:
    value = schema.get("type")
    return str(value) if value is not None else None


def _compare(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    path: str,
    version: str,
    problems: list[CRDChangeProblem],
) -> None:
    here = path or "."

    def report(message: str) -> None:
        problems.append(CRDChangeProblem(here, message, version=version))

    old_type, new_type = _type_of(old), _type_of(new)
    if old_type != new_type and new_type is not None:
        report(f"type changed from {old_type or 'any'} to {new_type}")
        return
    old_enum, new_enum = old.get("enum"), new.get("enum")
    if new_enum is not None:
        if old_enum is None:
            report(f"enum added ({new_enum}): values accepted before may now be rejected")
        else:
            lost = [v for v in old_enum if v not in new_enum]
            if lost:
                report(f"enum no longer allows {lost}")
    for key in _UPPER_BOUNDS:
        if key in new and (key not in old or new[key] < old[key]):
            report(f"{key} tightened from {old.get(key, 'unset')} to {new[key]}")
    for key in _LOWER_BOUNDS:
        if key in new and new[key] and (key not in old or new[key] > old[key]):
            report(f"{key} tightened from {old.get(key, 'unset')} to {new[key]}")
    added_required = sorted(set(new.get("required") or []) - set(old.get("required") or []))
    for name in added_required:
        problems.append(
            CRDChangeProblem(
                f"{path}.{name}",
                "newly required: existing objects without it would fail validation",
                version=version,
            )
        )
    old_props = old.get("properties") or {}
    new_props = new.get("properties") or {}
    for name, old_child in old_props.items():
        child_path = f"{path}.{name}"
        if name not in new_props:
            if new.get("x-kubernetes-preserve-unknown-fields") or new.get(
                "additionalProperties"
            ) not in (None, False):
                continue  # still stored as an unknown field, not pruned
            problems.append(
                CRDChangeProblem(
                    child_path,
                    "field removed: its values would be pruned from stored objects",
                    version=version,
                )
            )
            continue
        _compare(old_child, new_props[name], child_path, version, problems)
    old_items, new_items = old.get("items"), new.get("items")
    if isinstance(old_items, Mapping) and isinstance(new_items, Mapping):
        _compare(old_items, new_items, f"{path}[*]", version, problems)
    old_extra, new_extra = old.get("additionalProperties"), new.get("additionalProperties")
    if isinstance(old_extra, Mapping) and isinstance(new_extra, Mapping):
        _compare(old_extra, new_extra, f"{path}.*", version, problems)
