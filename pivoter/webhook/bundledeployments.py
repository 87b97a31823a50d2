"""Admission for ``BundleDeployment``: never more power through pivoter than the creator has.

A BundleDeployment installs with pivoter's own identity unless it names a service account, in
which case the provisioner impersonates that account. So, checked with SubjectAccessReviews for
the requesting user whenever the spec is created or changed:

* with ``spec.serviceAccount``: the user must be allowed to ``impersonate`` that service account;
* without it: the user must be allowed everything (``*`` on ``*`` in every group), i.e. already
  be able to do all that pivoter can;
* a template annotated ``pivoter.io/pull-service-account`` (whose ``imagePullSecrets`` pull the
  bundle image) names an account the user may impersonate: the one ``spec.serviceAccount``
  names, or another checked the same way (:func:`check_pull_account`, which Bundles share).

See docs/security.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.registries.names import ANNOTATION_PULL_SERVICE_ACCOUNT
from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["AccessCheck", "check_pull_account", "validate_bundle_deployment"]

AccessCheck = Callable[[Request, Mapping[str, str]], tuple[bool, str]]
"""``can(request, resourceAttributes) -> (allowed, reason)`` for the request's user."""


def check_pull_account(
    request: Request, annotations: Mapping[str, Any], can: AccessCheck, *, granted: str = ""
) -> Verdict | None:
    """Deny an annotation naming a service account (whose pull secrets then pull an image)
    that the user may not impersonate; None when there is none, or it is ``granted`` (already
    checked as ``NAMESPACE/NAME``), or the user may."""
    value = str(annotations.get(ANNOTATION_PULL_SERVICE_ACCOUNT) or "")
    if not value or value == granted:
        return None
    namespace, _, name = value.partition("/")
    attributes = {
        "verb": "impersonate",
        "group": "",
        "resource": "serviceaccounts",
        "namespace": namespace,
        "name": name,
    }
    allowed, reason = can(request, attributes)
    if allowed:
        return None
    return deny(
        f"{request.username} may not impersonate service account {value[:200]}, whose "
        f"imagePullSecrets the annotation {ANNOTATION_PULL_SERVICE_ACCOUNT} offers to registries"
        + (f" ({reason})" if reason else "")
    )


def validate_bundle_deployment(request: Request, can: AccessCheck) -> Verdict:
    """The verdict on a BundleDeployment CREATE or UPDATE."""
    spec: Mapping[str, Any] = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec == (request.old.get("spec") or {}):
        return allow()  # metadata or status only: no new power is asked for
    account = spec.get("serviceAccount")
    granted = f"{account.get('namespace') or ''}/{account.get('name') or ''}" if account else ""
    template_meta = (spec.get("template") or {}).get("metadata") or {}
    refused = check_pull_account(
        request, template_meta.get("annotations") or {}, can, granted=granted
    )
    if refused is not None:
        return refused
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
