"""Admission for ``BundleDeployment``: never more power through pivoter than the creator has.

A BundleDeployment installs with pivoter's own identity unless it names a service account, in
which case the provisioner impersonates that account. So, checked with SubjectAccessReviews for
the requesting user whenever the spec is created or changed:

* with ``spec.serviceAccount``: the user must be allowed to ``impersonate`` that service account;
* without it: the user must be allowed everything (``*`` on ``*`` in every group), i.e. already
  be able to do all that pivoter can.

See docs/security.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["AccessCheck", "validate_bundle_deployment"]

AccessCheck = Callable[[Request, Mapping[str, str]], tuple[bool, str]]
"""``can(request, resourceAttributes) -> (allowed, reason)`` for the request's user."""


def validate_bundle_deployment(request: Request, can: AccessCheck) -> Verdict:
    """The verdict on a BundleDeployment CREATE or UPDATE."""
    spec: Mapping[str, Any] = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec == (request.old.get("spec") or {}):
        return allow()  # metadata or status only: no new power is asked for
    account = spec.get("serviceAccount")
    if account:
        attributes = {
            "verb": "impersonate",
            "group": "",
            "resource": "serviceaccounts",
            "namespace": str(account.get("namespace") or ""),
            "name": str(account.get("name") or ""),
        }
        allowed, reason = can(request, attributes)
        if allowed:
            return allow()
        return deny(
            f"{request.username} may not impersonate service account "
            f"{attributes['namespace']}/{attributes['name']}, which spec.serviceAccount names"
            + (f" ({reason})" if reason else "")
        )
    allowed, reason = can(request, {"verb": "*", "group": "*", "resource": "*"})
    if allowed:
        return allow()
    return deny(
        f"{request.username} may not create a BundleDeployment without spec.serviceAccount: it "
        "would install with pivoter's own permissions, and only a user allowed every verb on "
        "every resource may do that; name a service account the user may impersonate"
        + (f" ({reason})" if reason else "")
    )
