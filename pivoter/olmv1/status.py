"""A ClusterExtension's status from an engine :class:`~pivoter.inputs.Outcome`, in OLM v1's
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
from pivoter.apis.conditions import FALSE, TRUE, Condition, set_condition, set_conditions
from pivoter.apis.views import ClusterExtensionView, InstalledBundle
from pivoter.catalogs import CatalogCache
from pivoter.inputs import Outcome
from pivoter.inputs.facts import ProgressState, ResolutionState
from pivoter.inputs.status import shared_dependencies, up_to_date
from pivoter.olmv1.deprecation import deprecation_conditions
from pivoter.olmv1.extensions import INVALID_CONFIGURATION, extension_spec, package_of
from pivoter.pivot import ChildState, FailureCause
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


FAILED_PIVOT_REASONS: Mapping[FailureCause | None, tuple[str, str]] = {
    FailureCause.INVALID_CONFIGURATION: (FALSE, olmv1.REASON_INVALID_CONFIGURATION),
    FailureCause.DEADLINE_EXCEEDED: (FALSE, olmv1.REASON_PROGRESS_DEADLINE_EXCEEDED),
}
"""``Progressing`` (status, reason) after a failed pivot, by its cause; any other cause (or
none recorded) is Retrying, as operator-controller retries a failed install."""


def installed_condition(
    package: str, out: Outcome, recorded: InstalledBundle | None = None
) -> tuple[Condition, dict[str, Any] | None]:
    """``Installed`` and ``status.install`` for the extension's own ``package``; ``recorded``:
    the ``status.install.bundle`` the object carries, kept while pivoter has installed nothing
    for it (what operator-controller installed before a takeover is still installed)."""
    record = out.record
    entry = _entry(out.active_document, package) if record.active is not None else None
    missing = next(
        (r for r in out.reports if r.package == package and r.state is ChildState.MISSING), None
    )
    if entry is not None and missing is None:
        bundle = {"bundle": {"name": entry.bundle, "version": entry.version}}
        message = f"Installed bundle {entry.image} successfully"
        return _installed(TRUE, olmv1.REASON_SUCCEEDED, message), bundle
    if missing is not None:
        return _installed(FALSE, olmv1.REASON_FAILED, missing.message), None
    if record.active is None and recorded is not None and recorded.package == package:
        bundle = {"bundle": {"name": recorded.name, "version": recorded.version}}
        message = (
            f"Installed bundle {recorded.name} (version {recorded.version}) as recorded before "
            "pivoter took over; it is the first revision pivoter installs"
        )
        return _installed(TRUE, olmv1.REASON_SUCCEEDED, message), bundle
    if record.pivoting:
        return _installed(FALSE, olmv1.REASON_ABSENT, MESSAGE_NO_BUNDLE), None
    return _installed(FALSE, olmv1.REASON_FAILED, MESSAGE_NO_BUNDLE), None


def _installed(status: str, reason: str, message: str) -> Condition:
    return Condition(olmv1.TYPE_INSTALLED, status, reason, message)


def progressing_condition(obj: Mapping[str, Any], out: Outcome) -> Condition:
    """``Progressing`` from what the pass found (see the module docstring)."""
    spec = extension_spec(obj)
    invalid = str(spec.extra.get(INVALID_CONFIGURATION) or "")
    if invalid:
        return _progressing(FALSE, olmv1.REASON_INVALID_CONFIGURATION, invalid)
    if out.conflict:
        return _progressing(TRUE, olmv1.REASON_RETRYING, out.conflict)
    progress = out.progressing
    if progress.state.moving:
        return _progressing(TRUE, olmv1.REASON_ROLLING_OUT, progress.message)
    if progress.state is ProgressState.AWAITING_APPROVAL:
        return _progressing(FALSE, olmv1.REASON_BLOCKED, progress.message)
    if progress.state.failed:
        status, reason = FAILED_PIVOT_REASONS.get(progress.cause, (TRUE, olmv1.REASON_RETRYING))
        return _progressing(status, reason, progress.message)
    resolved = out.resolved
    if resolved is not None and not resolved.state.ok:
        if resolved.state is ResolutionState.PINNED_REVISION_MISSING:
            return _progressing(FALSE, olmv1.REASON_BLOCKED, resolved.text)
        if resolved.state is ResolutionState.NO_CATALOGS:
            # No ClusterCatalog offers anything: OLM v1 says it finds no bundle for the package.
            no_bundles = f'no bundles found for package "{package_of(obj)}"'
            return _progressing(
                TRUE, olmv1.REASON_RETRYING, "; ".join([no_bundles, *resolved.notes])
            )
        return _progressing(TRUE, olmv1.REASON_RETRYING, resolved.text)
    failed = [r for r in out.reports if r.state in (ChildState.FAILED, ChildState.MISSING)]
    if failed:
        return _progressing(TRUE, olmv1.REASON_RETRYING, "; ".join(r.message for r in failed))
    if out.record.active is not None:
        return _progressing(TRUE, olmv1.REASON_SUCCEEDED, MESSAGE_DESIRED_STATE)
    return _progressing(TRUE, olmv1.REASON_RETRYING, progress.message)


def _progressing(status: str, reason: str, message: str) -> Condition:
    return Condition(olmv1.TYPE_PROGRESSING, status, reason, message)


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
        entry = _entry(out.selection, package) if out.resolved.state.ok else None
    else:
        entry = _entry(out.active_document, package)
    deprecation = deprecation_of(entry.catalog, package) if entry is not None else None
    known = entry is not None and deprecation is not _NO_CATALOG
    channels = ClusterExtensionView.parse(obj).catalog.channels
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
    installed, install = installed_condition(
        package, out, ClusterExtensionView.parse(obj).installed
    )
    set_conditions(conditions, [installed, progressing_condition(obj, out)], generation=generation)
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
    """The ``status_of`` of the ClusterExtension :class:`~pivoter.inputs.Kind`, reading
    deprecations from the ClusterCatalogs in ``cache``."""

    def deprecation_of(catalog: str, package: str) -> Any:
        entry = cache.get(f"ClusterCatalog/{catalog}")
        return entry.catalog.deprecation_of(package) if entry is not None else _NO_CATALOG

    def status_of(obj: Mapping[str, Any], out: Outcome, generation: int) -> dict[str, Any]:
        return extension_status(obj, out, generation, deprecation_of=deprecation_of)

    return status_of
