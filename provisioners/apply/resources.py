"""Which REST collection serves a kind: the ``Resource`` value and the discovery that finds it.

The appliers, informers and the Event recorder address objects by ``(apiVersion, kind)`` as
manifests do; :meth:`provisioners.apply.kubeapi.KubeAPI.resource` turns that into a
:class:`Resource` (plural, scope) by asking the API server, the way kubectl's RESTMapper
does. Well-known built-in kinds could be hard-coded, but asking keeps CRDs and built-ins on one
path.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["ApiVersionKind", "Resource", "split_api_version"]


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` -> ``("apps", "v1")``; ``"v1"`` -> ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True, slots=True)
class ApiVersionKind:
    """A kind in one API group and version, as ``apiVersion`` + ``kind`` name it in a manifest."""

    api_version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST collection: ``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def gvk(self) -> ApiVersionKind:
        """The kind this collection serves."""
        return ApiVersionKind(self.api_version, self.kind)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection's path (all namespaces when ``namespace`` is empty), or one object's."""
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{quote(namespace, safe='')}"
        root += f"/{self.plural}"
        return f"{root}/{quote(name, safe='')}" if name else root

    def __str__(self) -> str:
        group, version = split_api_version(self.api_version)
        return f"{self.plural}.{version}.{group}" if group else f"{self.plural}.{version}"
