"""Ask the API server whether a user may do something: one SubjectAccessReview.

The admission webhook (resource attributes: may this user impersonate that account?) and the
content server (non-resource attributes: may this token's user get this URL?) both decide with
the cluster's own authorizer through :func:`subject_access_review`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pivoter.kube.client import Kube
from provisioners.apply.resources import Resource

__all__ = ["ACCESS_REVIEWS", "Subject", "subject_access_review"]

ACCESS_REVIEWS = Resource(
    "authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", False
)


@dataclass(frozen=True)
class Subject:
    """Who asks: as a TokenReview or an AdmissionReview's ``userInfo`` names them."""

    username: str
    groups: Sequence[str] = ()
    uid: str = ""
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)


def subject_access_review(
    kube: Kube,
    subject: Subject,
    *,
    resource: Mapping[str, str] | None = None,
    non_resource: Mapping[str, str] | None = None,
) -> tuple[bool, str]:
    """Whether ``subject`` may do what the resource or non-resource attributes say, and the
    authorizer's reason."""
    spec: dict[str, object] = {
        "user": subject.username,
        "groups": list(subject.groups),
        "uid": subject.uid,
        "extra": {key: list(values) for key, values in subject.extra.items()},
    }
    if resource is not None:
        spec["resourceAttributes"] = dict(resource)
    if non_resource is not None:
        spec["nonResourceAttributes"] = dict(non_resource)
    review = kube.create(
        ACCESS_REVIEWS,
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
    )
    status = review.get("status") or {}
    return bool(status.get("allowed")), str(status.get("reason") or "")
