"""A PlatformOperator's status from an engine :class:`~pivoter.inputs.engine.Outcome`.

The reference's contract: one condition ``Installed`` with the reasons ``SourceFailed`` (no
bundle of the package can be found), ``UnpackPending``, ``InstallPending``, ``InstallFailed`` and
``InstallSuccessful``; when the BundleDeployment is not installed its reason and message are
copied; ``status.activeBundleDeployment.name`` names the BundleDeployment of the package. Plus
pivoter's revision record and its ``UpToDate`` condition (why not newer). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis import platform
from pivoter.apis.conditions import FALSE, TRUE, Condition, set_conditions
from pivoter.apis.views import PlatformOperatorView
from pivoter.inputs.outcome import Outcome
from pivoter.inputs.status import shared_dependencies, up_to_date
from pivoter.pivot import ChildState, child_name
from pivoter.resolvesets import InputRef

__all__ = ["installed_condition", "platform_operator_status"]


def installed_condition(package: str, out: Outcome) -> Condition:
    """The ``Installed`` condition of a PlatformOperator for ``package``."""
    reports = out.reports
    ready = bool(reports) and all(r.state is ChildState.READY for r in reports)
    progress = out.progressing
    if out.conflict:
        return _installed(FALSE, platform.REASON_INSTALL_FAILED, out.conflict)
    if progress.state.failed:
        return _installed(FALSE, platform.REASON_INSTALL_FAILED, progress.message)
    if ready and out.record.active is not None and not progress.state.moving:
        names = ", ".join(r.name for r in reports)
        message = f"Installed {package} ({names})"
        return _installed(TRUE, platform.REASON_INSTALL_SUCCESSFUL, message)
    resolved = out.resolved
    if resolved is not None and not resolved.state.ok and out.record.active is None:
        return _installed(
            FALSE,
            platform.REASON_SOURCE_FAILED,
            f"failed to find candidate olm.bundles from the {package} package: {resolved.text}",
        )
    for report in reports:
        if report.state is ChildState.MISSING:
            return _installed(FALSE, platform.REASON_INSTALL_PENDING, report.message)
        if report.state is ChildState.UNPACK_PENDING:
            return _installed(FALSE, platform.REASON_UNPACK_PENDING, report.message)
        if report.state is ChildState.FAILED:
            reason = report.reason or platform.REASON_INSTALL_FAILED
            return _installed(FALSE, reason, report.message)
    return _installed(FALSE, platform.REASON_INSTALL_PENDING, progress.message)


def _installed(status: str, reason: str, message: str) -> Condition:
    return Condition(platform.TYPE_INSTALLED, status, reason, message)


def platform_operator_status(
    obj: Mapping[str, Any], out: Outcome, generation: int
) -> dict[str, Any]:
    """The status of a PlatformOperator (a merge patch: None removes a field)."""
    name = str(obj["metadata"]["name"])
    package = PlatformOperatorView.parse(obj).package
    conditions: list[dict[str, Any]] = [
        dict(c) for c in (obj.get("status") or {}).get("conditions") or []
    ]
    set_conditions(conditions, [installed_condition(package, out)], generation=generation)
    conditions = up_to_date(conditions, out, generation)
    active = None
    gone = any(r.package == package and r.state is ChildState.MISSING for r in out.reports)
    if out.record.active is not None and not gone:
        active = {"name": child_name(InputRef("PlatformOperator", name), package, primary=True)}
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions,
        "activeBundleDeployment": active,
    }
    status.update(shared_dependencies(out))
    status.update(out.record.to_status())
    return status
