"""Admission for ``ClusterExtension`` when pivoter serves OLM v1's APIs: never more power through
pivoter than the creator has.

OLM v1 itself ignores ``spec.serviceAccount`` and installs everything with its own cluster-admin
identity, trusting whoever may write ClusterExtensions. pivoter honours the field, so the same
rule as for BundleDeployments applies, checked with SubjectAccessReviews for the requesting user
on create and on every change of ``spec``:

* with ``spec.serviceAccount.name``: the user must be allowed to ``impersonate`` that service
  account in ``spec.namespace`` (the children apply as that account);
* without it: the user must be allowed everything (``*`` on ``*`` in every group), because the
  extension installs with pivoter's own identity: OLM v1's trust model, made explicit.

Registered only when ``pivoter run`` serves ClusterExtensions (``--olmv1``); see docs/security.md
and docs/olm-v1.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.webhook.bundledeployments import AccessCheck
from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["validate_cluster_extension"]


def validate_cluster_extension(request: Request, can: AccessCheck) -> Verdict:
    """The verdict on a ClusterExtension CREATE or UPDATE."""
    spec: Mapping[str, Any] = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec == (request.old.get("spec") or {}):
        return allow()  # metadata or status only: no new power is asked for
    namespace = str(spec.get("namespace") or "")
    account = str((spec.get("serviceAccount") or {}).get("name") or "")
    if account:
        attributes = {
            "verb": "impersonate",
            "group": "",
            "resource": "serviceaccounts",
            "namespace": namespace,
            "name": account,
        }
        allowed, reason = can(request, attributes)
        if allowed:
            return allow()
        return deny(
            f"{request.username} may not impersonate service account {namespace}/{account}, "
            "which spec.serviceAccount names: pivoter installs the extension as that account"
            + (f" ({reason})" if reason else "")
        )
    allowed, reason = can(request, {"verb": "*", "group": "*", "resource": "*"})
    if allowed:
        return allow()
    return deny(
        f"{request.username} may not create a ClusterExtension without spec.serviceAccount: it "
        "would install with pivoter's own permissions, and only a user allowed every verb on "
        "every resource may do that; name a service account in spec.namespace that the user "
        "may impersonate" + (f" ({reason})" if reason else "")
    )
