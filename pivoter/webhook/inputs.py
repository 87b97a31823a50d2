"""Admission for pivot inputs, every kind of :data:`pivoter.apis.inputs.INPUT_KINDS`
(``Resolution``, ``PlatformOperator``, OLM v1's ``ClusterExtension``): never more power through
pivoter than the writer has.

An input installs its bundles as the service account it names (impersonated), or, naming none,
as pivoter itself. So, checked with SubjectAccessReviews for the requesting user on create and on
every change of ``spec``, as for BundleDeployments (:mod:`.bundledeployments`):

* with a service account: the user must be allowed to ``impersonate`` it;
* without one: the user must be allowed everything (``*`` on ``*`` in every group), because the
  input installs with pivoter's own identity. PlatformOperator has no such field: whoever may
  write one must be such a user (OpenShift's own trust model for it, made explicit), and OLM v1
  ignores ``spec.serviceAccount`` and trusts every writer of ClusterExtensions.

Where each kind names the account, and the words of a refusal, are the kind's
:class:`~pivoter.apis.inputs.InstallIdentity`.

Registered by :func:`pivoter.webhook.registration.configuration` (ClusterExtensions only when
pivoter serves OLM v1's APIs); see docs/security.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis.inputs import InputKind
from pivoter.webhook.bundledeployments import AccessCheck
from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["validate_input"]


def validate_input(kind: InputKind, request: Request, can: AccessCheck) -> Verdict:
    """The verdict on a CREATE or UPDATE of an input of ``kind``."""
    spec: Mapping[str, Any] = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec == (request.old.get("spec") or {}):
        return allow()  # metadata or status only: no new power is asked for
    identity = kind.identity
    account = identity.account(spec)
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
            f"which {identity.field} names: pivoter installs {identity.installs} as that account"
            + (f" ({reason})" if reason else "")
        )
    allowed, reason = can(request, {"verb": "*", "group": "*", "resource": "*"})
    if allowed:
        return allow()
    without = f" without {identity.field}" if identity.field else ""
    return deny(
        f"{request.username} may not create a {kind.kind}{without}: it would install with "
        "pivoter's own permissions, and only a user allowed every verb on every resource may do "
        f"that; {identity.remedy}" + (f" ({reason})" if reason else "")
    )
