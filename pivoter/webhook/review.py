"""AdmissionReview ``admission.k8s.io/v1`` in and out: the request a validator sees and its verdict.

Validators are functions ``(Request) -> Verdict``; :func:`respond` wraps a verdict into the
response the API server expects (the ``uid`` echoed, a 403 status and message on denial).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Request", "Validator", "Verdict", "allow", "deny", "respond"]


@dataclass(frozen=True)
class Request:
    """The parts of an AdmissionRequest validators use."""

    uid: str
    operation: str
    kind: str
    name: str
    namespace: str
    obj: Mapping[str, Any]
    old: Mapping[str, Any]
    username: str
    groups: tuple[str, ...]
    uid_of_user: str = ""
    extra: Mapping[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_review(cls, review: Mapping[str, Any]) -> Request:
        """Decode ``review`` (an AdmissionReview); raise ValueError when it is not one."""
        if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != (
            "AdmissionReview"
        ):
            raise ValueError("expected an admission.k8s.io/v1 AdmissionReview")
        request = review.get("request")
        if not isinstance(request, Mapping) or not request.get("uid"):
            raise ValueError("the AdmissionReview has no request")
        user = request.get("userInfo") or {}
        return cls(
            uid=str(request["uid"]),
            operation=str(request.get("operation") or ""),
            kind=str((request.get("kind") or {}).get("kind") or ""),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            obj=request.get("object") or {},
            old=request.get("oldObject") or {},
            username=str(user.get("username") or ""),
            groups=tuple(user.get("groups") or ()),
            uid_of_user=str(user.get("uid") or ""),
            extra=user.get("extra") or {},
        )


@dataclass(frozen=True)
class Verdict:
    """Allowed or not, and why (the message the user sees on denial)."""

    allowed: bool
    message: str = ""
    warnings: tuple[str, ...] = ()


def allow(*warnings: str) -> Verdict:
    """Admit, optionally with warnings the client prints."""
    return Verdict(True, "", tuple(warnings))


def deny(message: str) -> Verdict:
    """Refuse with ``message``."""
    return Verdict(False, message)


Validator = Callable[[Request], Verdict]


def respond(uid: str, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview response for ``verdict``."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": verdict.message}
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
