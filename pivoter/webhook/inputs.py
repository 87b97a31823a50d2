"""Admission for pivot inputs (``Resolution``, ``PlatformOperator``, OLM v1's ``ClusterExtension``):
never more power through pivoter than the writer has.

An input installs its bundles as the service account it names (impersonated), or, naming none,
as pivoter itself. So, checked with SubjectAccessReviews for the requesting user on create and on
every change of ``spec``, as for BundleDeployments (:mod:`.bundledeployments`):

* with a service account: the user must be allowed to ``impersonate`` it;
* without one: the user must be allowed everything (``*`` on ``*`` in every group), because the
  input installs with pivoter's own identity. PlatformOperator has no such field: whoever may
  write one must be such a user (OpenShift's own trust model for it, made explicit), and OLM v1
  ignores ``spec.serviceAccount`` and trusts every writer of ClusterExtensions.

Registered by :func:`pivoter.webhook.registration.configuration` (ClusterExtensions only when
pivoter serves OLM v1's APIs); see docs/security.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.webhook.bundledeployments import AccessCheck
from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["CLUSTER_EXTENSION", "PLATFORM_OPERATOR", "RESOLUTION", "InputKind", "validate_input"]

Account = tuple[str, str]
"""A service account: (namespace, name)."""


@dataclass(frozen=True)
class InputKind:
    """Where an input kind names its install identity, and how messages speak of it."""

    kind: str
    account: Callable[[Mapping[str, Any]], Account | None]
    """The service account ``spec`` names, or None (pivoter's own identity)."""
    field: str
    """The field naming the account ("" when the kind has none)."""
    installs: str
    """What the input installs, for messages ("the extension", "the bundles")."""
    remedy: str
    """What the user may do instead of being allowed everything."""


def _resolution_account(spec: Mapping[str, Any]) -> Account | None:
    account = spec.get("serviceAccount") or {}
    name = str(account.get("name") or "")
    return (str(account.get("namespace") or ""), name) if name else None


def _extension_account(spec: Mapping[str, Any]) -> Account | None:
    name = str((spec.get("serviceAccount") or {}).get("name") or "")
    return (str(spec.get("namespace") or ""), name) if name else None


RESOLUTION = InputKind(
    "Resolution",
    _resolution_account,
    "spec.serviceAccount",
    "the bundles",
    "name a service account the user may impersonate in spec.serviceAccount",
)
PLATFORM_OPERATOR = InputKind(
    "PlatformOperator",
    lambda spec: None,
    "",
    "the operator",
    "use a Resolution naming a service account the user may impersonate",
)
CLUSTER_EXTENSION = InputKind(
    "ClusterExtension",
    _extension_account,
    "spec.serviceAccount",
    "the extension",
    "name a service account in spec.namespace that the user may impersonate",
)


def validate_input(kind: InputKind, request: Request, can: AccessCheck) -> Verdict:
    """The verdict on a CREATE or UPDATE of an input of ``kind``."""
    spec: Mapping[str, Any] = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec == (request.old.get("spec") or {}):
        return allow()  # metadata or status only: no new power is asked for
    account = kind.account(spec)
    if account is not None:
        namespace, name = account
        attributes = {
            "verb": "impersonate",
            "group": "",
            "resource": "serviceaccounts",
            "namespace": namespace,
            "name": name,
        }
        allowed, reason = can(request, attributes)
        if allowed:
            return allow()
        return deny(
            f"{request.username} may not impersonate service account {namespace}/{name}, "
            f"which {kind.field} names: pivoter installs {kind.installs} as that account"
            + (f" ({reason})" if reason else "")
        )
    allowed, reason = can(request, {"verb": "*", "group": "*", "resource": "*"})
    if allowed:
        return allow()
    without = f" without {kind.field}" if kind.field else ""
    return deny(
        f"{request.username} may not create a {kind.kind}{without}: it would install with "
        "pivoter's own permissions, and only a user allowed every verb on every resource may do "
        f"that; {kind.remedy}" + (f" ({reason})" if reason else "")
    )
