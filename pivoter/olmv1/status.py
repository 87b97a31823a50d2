"""A ClusterExtension's status from an engine :class:`~pivoter.resolutions.Outcome`, in OLM v1's
words: ``status.install.bundle`` and the conditions ``Installed``, ``Progressing``,
``Deprecated``, ``PackageDeprecated``, ``ChannelDeprecated`` and ``BundleDeprecated`` with
operator-controller's reasons and messages, so that ``kubectl wait`` lines and tools written for
OLM v1 read it unchanged. pivoter adds the ``UpToDate`` condition (why not newer) and its own
optional fields (``pivoter:`` in the CRD): the selected group, the revision record, a pending
plan, shared dependencies, the explanation of an unsatisfiable request.

How pivoter's states map (docs/olm-v1.md has the table):

* ``Installed``: True/``Succeeded`` "Installed bundle <image> successfully" for the active
  revision's own bundle; False/``Absent`` while a first pivot runs; False/``Failed`` "No bundle
  installed" otherwise (or the message of its child when it was deleted by hand).
* ``Progressing``: True/``Succeeded`` "Desired state reached"; True/``RollingOut`` during a pivot
  or a rollback; True/``Retrying`` with the resolver's message (OLM v1's own words under the
  default rules), a conflict with another input, a failed or rolled-back pivot waiting for its
  retry; False/``Blocked`` while a Manual approval or a pin needs a person;
  False/``InvalidConfiguration`` for ``spec.config`` a bundle cannot take;
  False/``ProgressDeadlineExceeded`` when ``progressDeadlineMinutes`` passed.

Built by :func:`status_function` for :mod:`pivoter.olmv1.setup` (it reads the catalog cache for
the deprecations); the mapping itself is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.apis import olmv1
from pivoter.apis.conditions import FALSE, TRUE, set_condition
from pivoter.catalogs import CatalogCache
from pivoter.olmv1.deprecation import deprecation_conditions
from pivoter.olmv1.extensions import INVALID_CONFIGURATION, extension_spec, package_of
from pivoter.pivot import ChildState
from pivoter.resolutions import Outcome
from pivoter.resolutions.engine import Status3
from pivoter.resolutions.status import shared_dependencies, up_to_date
from resolver.catalog.model import Deprecation
from resolver.resolveset import ResolveSet

__all__ = [
    "MESSAGE_DESIRED_STATE",
    "MESSAGE_NO_BUNDLE",
    "extension_status",
    "installed_condition",
    "progressing_condition",
    "status_function",
]

MESSAGE_DESIRED_STATE = "Desired state reached"
MESSAGE_NO_BUNDLE = "No bundle installed"

_NO_CATALOG = object()
"""What :data:`DeprecationOf` answers for a catalog that is not in the cache."""
DeprecationOf = Callable[[str, str], Any]
"""(catalog name, package) -> the package's deprecations in that ClusterCatalog (None: none;
:data:`_NO_CATALOG`: the catalog is gone)."""


def _entry(document: ResolveSet | None, package: str) -> Any:
    if document is None:
        return None
    return next((e for e in document.entries if e.package == package), None)


def installed_condition(package: str, out: Outcome) -> tuple[Status3, dict[str, Any] | None]:
    """``Installed`` and ``status.install`` for the extension's own ``package``."""
    record = out.record
    entry = _entry(out.active_document, package) if record.active is not None else None
    missing = next(
        (r for r in out.reports if r.package == package and r.state is ChildState.MISSING), None
    )
    if entry is not None and missing is None:
        bundle = {"bundle": {"name": entry.bundle, "version": entry.version}}
        return (
            (TRUE, olmv1.REASON_SUCCEEDED, f"Installed bundle {entry.image} successfully"),
            bundle,
        )
    if missing is not None:
        return (FALSE, olmv1.REASON_FAILED, missing.message), None
    if record.pivoting:
        return (FALSE, olmv1.REASON_ABSENT, MESSAGE_NO_BUNDLE), None
    return (FALSE, olmv1.REASON_FAILED, MESSAGE_NO_BUNDLE), None


def progressing_condition(obj: Mapping[str, Any], out: Outcome) -> Status3:
    """``Progressing`` from what the pass found (see the module docstring)."""
    spec = extension_spec(obj)
    invalid = str(spec.extra.get(INVALID_CONFIGURATION) or "")
    if invalid:
        return FALSE, olmv1.REASON_INVALID_CONFIGURATION, invalid
    if out.conflict:
        return TRUE, olmv1.REASON_RETRYING, out.conflict
    _, reason, message = out.progressing
    if reason in ("Pivoting", "RollingBack"):
        return TRUE, olmv1.REASON_ROLLING_OUT, message
    if reason == "AwaitingApproval":
        return FALSE, olmv1.REASON_BLOCKED, message
    if reason in ("PivotFailed", "RolledBack"):
        if "spec.config" in message:
            return FALSE, olmv1.REASON_INVALID_CONFIGURATION, message
        if "the progress deadline of" in message:
            return FALSE, olmv1.REASON_PROGRESS_DEADLINE_EXCEEDED, message
        return TRUE, olmv1.REASON_RETRYING, message
    if out.resolved is not None and out.resolved[0] == FALSE:
        return _not_resolved(obj, out.resolved)
    failed = [r for r in out.reports if r.state in (ChildState.FAILED, ChildState.MISSING)]
    if failed:
        return TRUE, olmv1.REASON_RETRYING, "; ".join(r.message for r in failed)
    if out.record.active is not None:
        return TRUE, olmv1.REASON_SUCCEEDED, MESSAGE_DESIRED_STATE
    return TRUE, olmv1.REASON_RETRYING, message


def _not_resolved(obj: Mapping[str, Any], resolved: Status3) -> Status3:
    _, reason, message = resolved
    if reason == "PinnedRevisionMissing":
        return FALSE, olmv1.REASON_BLOCKED, message
    if reason == "NoCatalogs":
        # No ClusterCatalog offers anything: OLM v1 says it finds no bundle for the package.
        notes = message.split("; ", 1)[1] if "; " in message else ""
        message = f'no bundles found for package "{package_of(obj)}"'
        if notes:
            message += f"; {notes}"
    return TRUE, olmv1.REASON_RETRYING, message


def _deprecations(
    obj: Mapping[str, Any],
    out: Outcome,
    package: str,
    install: dict[str, Any] | None,
    deprecation_of: DeprecationOf,
) -> list[tuple[str, str, str, str]]:
    """The deprecation conditions: from the catalog of the bundle this pass resolved to, or, in a
    pass that did not resolve (a pivot going on), of the installed bundle; Unknown when the
    request did not resolve or its catalog is gone."""
    if out.resolved is not None:
        entry = _entry(out.selection, package) if out.resolved[0] == TRUE else None
    else:
        entry = _entry(out.active_document, package)
    deprecation = deprecation_of(entry.catalog, package) if entry is not None else None
    known = entry is not None and deprecation is not _NO_CATALOG
    channels = (((obj.get("spec") or {}).get("source") or {}).get("catalog") or {}).get(
        "channels"
    ) or []
    return deprecation_conditions(
        deprecation if isinstance(deprecation, Deprecation) else None,
        has_catalog_data=known,
        channels=channels,
        installed_bundle=str(install["bundle"]["name"]) if install else "",
    )


def extension_status(
    obj: Mapping[str, Any], out: Outcome, generation: int, *, deprecation_of: DeprecationOf
) -> dict[str, Any]:
    """The status of a ClusterExtension (a merge patch: None removes a field)."""
    package = package_of(obj)
    previous = obj.get("status") or {}
    conditions: list[dict[str, Any]] = [dict(c) for c in previous.get("conditions") or []]
    installed, install = installed_condition(package, out)
    set_condition(conditions, olmv1.TYPE_INSTALLED, *installed, generation=generation)
    set_condition(
        conditions, olmv1.TYPE_PROGRESSING, *progressing_condition(obj, out), generation=generation
    )
    for type_, value, reason, message in _deprecations(obj, out, package, install, deprecation_of):
        set_condition(conditions, type_, value, reason, message, generation=generation)
    conditions = up_to_date(conditions, out, generation)
    selection = None
    if out.selection is not None:
        selection = [
            {
                "package": e.package,
                "version": e.version,
                "bundle": e.bundle,
                "channel": e.channel or None,
                "catalog": e.catalog or None,
                "requires": list(e.requires) or None,
            }
            for e in out.selection.entries
        ]
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions,
        "install": install,
        "selection": selection,
        "selectionHash": out.selection.selection_hash if out.selection is not None else None,
        "explanation": out.explanation or None,
        "pendingPlan": out.pending_plan,
    }
    status.update(shared_dependencies(out))
    status.update(out.record.to_status())
    return status


def status_function(
    cache: CatalogCache,
) -> Callable[[Mapping[str, Any], Outcome, int], dict[str, Any]]:
    """The ``status_of`` of the ClusterExtension :class:`~pivoter.resolutions.Kind`, reading
    deprecations from the ClusterCatalogs in ``cache``."""

    def deprecation_of(catalog: str, package: str) -> Any:
        entry = cache.get(f"ClusterCatalog/{catalog}")
        return entry.catalog.deprecation_of(package) if entry is not None else _NO_CATALOG

    def status_of(obj: Mapping[str, Any], out: Outcome, generation: int) -> dict[str, Any]:
        return extension_status(obj, out, generation, deprecation_of=deprecation_of)

    return status_of
