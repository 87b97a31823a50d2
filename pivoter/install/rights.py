"""What the user lacks to install pivoter, asked before anything is applied: nothing half-applies.

Every object needs ``get``, ``create`` and ``patch`` (server-side apply creates or patches) in its
namespace. A ClusterRole or Role is only created by a user who holds every right it grants, or
may ``escalate``; a binding only by one who holds every right of the role it binds, or may
``bind`` it (Kubernetes' RBAC escalation rule). Each question is one SelfSubjectAccessReview,
answered by the cluster's own authorizer; nothing is guessed from the user's name or groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.kube import Kube, Resource

__all__ = ["Missing", "missing_rights"]

SELF_REVIEWS = Resource(
    "authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False
)
_RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Missing:
    """One right the user lacks, and the object that needs it."""

    verb: str
    what: str  # "deployments.apps in pivoter-system", "nonResourceURL /metrics"
    needed_for: str  # "ClusterRole pivoter-manager"

    def __str__(self) -> str:
        return f"{self.verb} {self.what} (for {self.needed_for})"


def _describe(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    where = f"{namespace}/" if namespace else ""
    return f"{obj.get('kind')} {where}{metadata.get('name')}"


class _Reviewer:
    """SelfSubjectAccessReviews, each asked once."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self._answers: dict[tuple[tuple[str, str], ...], bool] = {}

    def allowed(self, attributes: Mapping[str, str], *, non_resource: bool = False) -> bool:
        key = (("non_resource", str(non_resource)), *sorted(attributes.items()))
        if key not in self._answers:
            field = "nonResourceAttributes" if non_resource else "resourceAttributes"
            review = self._kube.create(
                SELF_REVIEWS,
                {
                    "apiVersion": SELF_REVIEWS.api_version,
                    "kind": SELF_REVIEWS.kind,
                    "spec": {field: dict(attributes)},
                },
            )
            self._answers[key] = bool((review.get("status") or {}).get("allowed"))
        return self._answers[key]


def _resource_of(kube: Kube, obj: Mapping[str, Any]) -> tuple[str, str]:
    """(group, plural) of an object's kind, from discovery."""
    resource = kube.resource(str(obj["apiVersion"]), str(obj["kind"]))
    group = resource.api_version.rpartition("/")[0]
    return group, resource.plural


def _rule_rights(rule: Mapping[str, Any], namespace: str) -> Iterable[tuple[dict[str, str], bool]]:
    """Each (attributes, is non-resource) a policy rule grants."""
    verbs = [str(v) for v in rule.get("verbs") or []]
    for url in rule.get("nonResourceURLs") or []:
        for verb in verbs:
            yield {"verb": verb, "path": str(url)}, True
    names = [str(n) for n in rule.get("resourceNames") or []] or [""]
    for group in rule.get("apiGroups") or []:
        for plural in rule.get("resources") or []:
            resource, _, subresource = str(plural).partition("/")
            for verb in verbs:
                for name in names:
                    attributes = {"verb": verb, "group": str(group), "resource": resource}
                    if subresource:
                        attributes["subresource"] = subresource
                    if name:
                        attributes["name"] = name
                    if namespace:
                        attributes["namespace"] = namespace
                    yield attributes, False


def _what(attributes: Mapping[str, str], non_resource: bool) -> str:
    if non_resource:
        return f"nonResourceURL {attributes['path']}"
    resource = attributes["resource"]
    if attributes.get("subresource"):
        resource += f"/{attributes['subresource']}"
    group = attributes.get("group", "")
    text = f"{resource}.{group}" if group else resource
    if attributes.get("name"):
        text += f" named {attributes['name']}"
    if attributes.get("namespace"):
        text += f" in {attributes['namespace']}"
    return text


def _roles(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """The roles being installed, by (kind, namespace, name)."""
    return {
        (
            str(o["kind"]),
            str((o.get("metadata") or {}).get("namespace") or ""),
            str(o["metadata"]["name"]),
        ): o
        for o in objects
        if o.get("kind") in ("ClusterRole", "Role")
        and str(o.get("apiVersion", "")).startswith(_RBAC)
    }


def missing_rights(kube: Kube, objects: Iterable[Mapping[str, Any]]) -> list[Missing]:
    """Every right the user lacks to apply ``objects`` (empty: the install may go ahead)."""
    objects = list(objects)
    reviewer = _Reviewer(kube)
    missing: list[Missing] = []
    roles = _roles(objects)

    def need(attributes: dict[str, str], for_object: str, *, non_resource: bool = False) -> bool:
        if reviewer.allowed(attributes, non_resource=non_resource):
            return True
        missing.append(Missing(attributes["verb"], _what(attributes, non_resource), for_object))
        return False

    def lacks_rules(role: Mapping[str, Any], namespace: str, for_object: str) -> None:
        for rule in role.get("rules") or []:
            for attributes, non_resource in _rule_rights(rule, namespace):
                need(attributes, for_object, non_resource=non_resource)

    for obj in objects:
        described = _describe(obj)
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        group, plural = _resource_of(kube, obj)
        for verb in ("get", "create", "patch"):
            attributes = {"verb": verb, "group": group, "resource": plural}
            if namespace:
                attributes["namespace"] = namespace
            need(attributes, described)
        kind = obj.get("kind")
        if group != _RBAC:
            continue
        if kind in ("ClusterRole", "Role"):
            escalate = {"verb": "escalate", "group": _RBAC, "resource": plural}
            if namespace:
                escalate["namespace"] = namespace
            if not reviewer.allowed(escalate):
                lacks_rules(obj, namespace, described)
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            ref = obj.get("roleRef") or {}
            ref_kind, ref_name = str(ref.get("kind", "")), str(ref.get("name", ""))
            ref_plural = "clusterroles" if ref_kind == "ClusterRole" else "roles"
            bind = {"verb": "bind", "group": _RBAC, "resource": ref_plural, "name": ref_name}
            if namespace:
                bind["namespace"] = namespace
            if reviewer.allowed(bind):
                continue
            role = roles.get((ref_kind, "" if ref_kind == "ClusterRole" else namespace, ref_name))
            if role is None:
                missing.append(Missing("bind", f"{ref_plural}.{_RBAC} named {ref_name}", described))
            else:
                lacks_rules(role, namespace, described)
    return list(dict.fromkeys(missing))
