"""Which pull secrets an object names, in the order they are offered to a registry.

The precedence, most specific first (each Secret is matched by its own most specific entry, and
a registry that rejects one is offered the next; :mod:`provisioners.registries.pull`):

1. a Bundle's own ``spec.source.image.pullSecret`` (pivoter's namespace; rukpak's field);
2. the ``imagePullSecrets`` of the service account the bundle installs with (the Kubernetes
   convention: what the kubelet offers for a Pod of that account), named on the Bundle by
   :data:`ANNOTATION_PULL_SERVICE_ACCOUNT`;
3. the pull secret of every catalog that names the bundle's image (a Catalog's
   ``spec.source.image.pullSecret``, a ClusterCatalog's :data:`ANNOTATION_PULL_SECRET`;
   :class:`~pivoter.registries.access.CatalogSecrets`): a catalog's credentials serve the
   images it offers and nothing else;
4. the global pull secret (``pivoter run --global-pull-secret``), added by
   :class:`~pivoter.registries.access.RegistryAccessProvider`.

A catalog image is offered its own secret (3), then the global one (4). pivoter sets
:data:`ANNOTATION_PULL_SERVICE_ACCOUNT` on the children it creates (in the template, so prepared
and generated Bundles carry it); the admission webhook lets a user set it only where the user may
impersonate the account.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis.resources import SERVICE_ACCOUNTS
from pivoter.kube import Forbidden, Kube, NotFound
from pivoter.registries.secrets import PullSecretRef, UnusablePullSecret
from provisioners.errors import InvalidSourceError

__all__ = [
    "ANNOTATION_PULL_SECRET",
    "ANNOTATION_PULL_SERVICE_ACCOUNT",
    "bundle_pull_secrets",
    "catalog_pull_secrets",
    "cluster_catalog_pull_secrets",
    "service_account_pull_secrets",
]

ANNOTATION_PULL_SECRET = "pivoter.io/pull-secret"
"""On a ClusterCatalog: the name of a pull secret in pivoter's namespace for its image and its
bundles (OLM v1's ClusterCatalog has no field for one; catalogd issue 221)."""
ANNOTATION_PULL_SERVICE_ACCOUNT = "pivoter.io/pull-service-account"
"""On a Bundle (or a BundleDeployment's template): ``NAMESPACE/NAME`` of the service account whose
``imagePullSecrets`` are offered for its image."""


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def service_account_pull_secrets(kube: Kube, namespace: str, name: str) -> list[PullSecretRef]:
    """The account's ``imagePullSecrets`` (in its namespace), each skipped when missing as the
    kubelet skips it; none when the account does not exist."""
    try:
        account = kube.get(SERVICE_ACCOUNTS, name, namespace)
    except NotFound:
        return []
    except Forbidden:
        raise UnusablePullSecret(
            f"service account {namespace}/{name}: pivoter may not read it to find its "
            "imagePullSecrets (grant its service account get on serviceaccounts)"
        ) from None
    refs = []
    for entry in account.get("imagePullSecrets") or []:
        secret = str((entry or {}).get("name") or "") if isinstance(entry, Mapping) else ""
        if secret:
            refs.append(
                PullSecretRef(
                    namespace,
                    secret,
                    field=f"imagePullSecrets of service account {namespace}/{name}",
                )
            )
    return refs


def bundle_pull_secrets(
    kube: Kube, bundle: Mapping[str, Any], system_namespace: str
) -> list[PullSecretRef]:
    """The pull secrets a Bundle names, most specific first (1-2 of the module docstring)."""
    refs: list[PullSecretRef] = []
    image = (((bundle.get("spec") or {}).get("source") or {}).get("image")) or {}
    own = str(image.get("pullSecret") or "") if isinstance(image, Mapping) else ""
    if own:
        refs.append(
            PullSecretRef(
                system_namespace, own, required=True, field="spec.source.image.pullSecret"
            )
        )
    annotations = _annotations(bundle)
    account = str(annotations.get(ANNOTATION_PULL_SERVICE_ACCOUNT) or "")
    if account:
        namespace, sep, name = account.partition("/")
        if not sep or not namespace or not name:
            raise InvalidSourceError(
                f"annotation {ANNOTATION_PULL_SERVICE_ACCOUNT}: {account[:100]!r} is not "
                "NAMESPACE/NAME"
            )
        refs.extend(service_account_pull_secrets(kube, namespace, name))
    return refs


def catalog_pull_secrets(spec: Mapping[str, Any], namespace: str) -> list[PullSecretRef]:
    """A Catalog's image pull secret (``spec.source.image.pullSecret``, in pivoter's
    namespace), if it names one."""
    image = ((spec.get("source") or {}).get("image")) or {}
    name = str(image.get("pullSecret") or "") if isinstance(image, Mapping) else ""
    if not name:
        return []
    return [PullSecretRef(namespace, name, required=True, field="spec.source.image.pullSecret")]


def cluster_catalog_pull_secrets(
    cluster_catalog: Mapping[str, Any], namespace: str
) -> list[PullSecretRef]:
    """A ClusterCatalog's :data:`ANNOTATION_PULL_SECRET` (a Secret name in pivoter's
    namespace), if it has one."""
    name = str(_annotations(cluster_catalog).get(ANNOTATION_PULL_SECRET) or "").strip()
    if not name:
        return []
    if "/" in name:
        raise InvalidSourceError(
            f"annotation {ANNOTATION_PULL_SECRET}: {name[:100]!r} must be the name of a Secret "
            f"in pivoter's namespace ({namespace}), not NAMESPACE/NAME"
        )
    field = f"annotation {ANNOTATION_PULL_SECRET}"
    return [PullSecretRef(namespace, name, required=True, field=field)]
