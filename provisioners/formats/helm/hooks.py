"""Which Helm chart hooks pivoter runs, read from the rendered objects' annotations.

``helm.sh/hook`` names the events (comma-separated). Pivoter runs ``pre-install`` and
``post-install`` hooks around a BundleDeployment's first install and ``pre-upgrade`` and
``post-upgrade`` hooks around every later change of its content (a pivot to an older bundle is
an upgrade too), in ``helm.sh/hook-weight`` order, then install order, then name, as Helm does.
``helm.sh/hook-delete-policy`` is honoured (``before-hook-creation``, the default when none is
given, ``hook-succeeded``, ``hook-failed``). Test hooks are skipped, as ``helm install`` skips
them. Delete and rollback hooks are refused with the reason: pivoter has no release to roll back
and does not run anything while a BundleDeployment is deleted.
"""

from __future__ import annotations

from typing import Any

from provisioners.formats.base import Hook, InvalidManifestError

__all__ = [
    "DELETE_POLICIES",
    "EVENTS",
    "HOOK_ANNOTATION",
    "UnsupportedHookError",
    "hook_of",
]

HOOK_ANNOTATION = "helm.sh/hook"
WEIGHT_ANNOTATION = "helm.sh/hook-weight"
DELETE_POLICY_ANNOTATION = "helm.sh/hook-delete-policy"

EVENTS = ("pre-install", "post-install", "pre-upgrade", "post-upgrade")
TEST_EVENTS = ("test", "test-success", "test-failure")
REFUSED = {
    "pre-delete": "pivoter runs nothing while a BundleDeployment is deleted",
    "post-delete": "pivoter runs nothing while a BundleDeployment is deleted",
    "pre-rollback": "pivoter has no Helm release to roll back (a pivot back is an upgrade)",
    "post-rollback": "pivoter has no Helm release to roll back (a pivot back is an upgrade)",
}
DELETE_POLICIES = ("before-hook-creation", "hook-succeeded", "hook-failed")


class UnsupportedHookError(InvalidManifestError):
    """The chart has a hook pivoter does not run."""


def _split(value: Any) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(value or "").split(",") if p.strip())


def hook_of(document: dict[str, Any]) -> Hook | str | None:
    """The :class:`Hook` ``document`` is, None when it is an ordinary object, or ``"skip"`` for
    a test hook; raise :class:`UnsupportedHookError` naming the object and the reason."""
    metadata = document.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    events = _split(annotations.get(HOOK_ANNOTATION))
    if not events:
        return None
    where = f"{document.get('kind')} {metadata.get('name')}"
    refused = [e for e in events if e not in EVENTS and e not in TEST_EVENTS]
    if refused:
        reasons = "; ".join(
            f"{e}: {REFUSED.get(e, 'not a Helm hook event pivoter knows')}" for e in refused
        )
        raise UnsupportedHookError(
            f"{where} is a Helm hook ({', '.join(events)}) pivoter does not run ({reasons}); "
            f"pivoter runs {', '.join(EVENTS)} hooks. Remove the event, or the hook annotation "
            "to install it as an ordinary object"
        )
    run = tuple(e for e in events if e in EVENTS)
    if not run:
        return "skip"
    try:
        weight = int(str(annotations.get(WEIGHT_ANNOTATION) or "0").strip())
    except ValueError:
        raise UnsupportedHookError(
            f"{where}: {WEIGHT_ANNOTATION} must be an integer, not "
            f"{annotations.get(WEIGHT_ANNOTATION)!r}"
        ) from None
    policies = _split(annotations.get(DELETE_POLICY_ANNOTATION)) or ("before-hook-creation",)
    unknown = [p for p in policies if p not in DELETE_POLICIES]
    if unknown:
        raise UnsupportedHookError(
            f"{where}: unknown {DELETE_POLICY_ANNOTATION} {', '.join(unknown)} "
            f"(known: {', '.join(DELETE_POLICIES)})"
        )
    return Hook(run, weight, policies, document)
