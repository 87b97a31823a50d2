"""Every API resource pivoter reads or writes, defined once: its own kinds, the kinds it accepts
from others (rukpak, OLM v1, OpenShift's platform API, OLM v0's CatalogSource) and the core
kinds it touches. Each room imports the resource it needs from here rather than defining its own
(three copies of the Resolution resource once disagreed about nothing but could have).

OLM v0's own kinds, which only the adopter reads, stay in :mod:`pivoter.olmv0.resources`.
"""

from __future__ import annotations

from pivoter.apis import olmv1, platform, rukpak
from pivoter.apis import pivoter as api
from provisioners.apply.resources import Resource

__all__ = [
    "BUNDLES",
    "BUNDLE_DEPLOYMENTS",
    "CATALOGS",
    "CATALOG_SOURCES",
    "CLUSTER_CATALOGS",
    "CLUSTER_EXTENSIONS",
    "CONFIG_MAPS",
    "CRDS",
    "IMAGE_CONTENT_SOURCE_POLICIES",
    "IMAGE_DIGEST_MIRROR_SETS",
    "IMAGE_TAG_MIRROR_SETS",
    "LEASES",
    "NAMESPACES",
    "PLATFORM_OPERATORS",
    "PODS",
    "RESOLUTIONS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
    "TOKEN_REVIEWS",
]

# pivoter.io
RESOLUTIONS = Resource(api.API_VERSION, "Resolution", "resolutions", namespaced=False)
CATALOGS = Resource(api.API_VERSION, "Catalog", "catalogs", namespaced=False)

# Inputs and children pivoter accepts from others.
PLATFORM_OPERATORS = Resource(
    platform.API_VERSION, "PlatformOperator", "platformoperators", namespaced=False
)
CLUSTER_EXTENSIONS = Resource(
    olmv1.API_VERSION, "ClusterExtension", "clusterextensions", namespaced=False
)
CLUSTER_CATALOGS = Resource(
    olmv1.API_VERSION, "ClusterCatalog", "clustercatalogs", namespaced=False
)
BUNDLES = Resource(rukpak.API_VERSION, "Bundle", "bundles", namespaced=False)
BUNDLE_DEPLOYMENTS = Resource(
    rukpak.API_VERSION, "BundleDeployment", "bundledeployments", namespaced=False
)
CATALOG_SOURCES = Resource(
    "operators.coreos.com/v1alpha1", "CatalogSource", "catalogsources", namespaced=True
)

# Kubernetes' own.
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
SERVICE_ACCOUNTS = Resource("v1", "ServiceAccount", "serviceaccounts", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
PODS = Resource("v1", "Pod", "pods", namespaced=True)
LEASES = Resource("coordination.k8s.io/v1", "Lease", "leases", namespaced=True)
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
TOKEN_REVIEWS = Resource("authentication.k8s.io/v1", "TokenReview", "tokenreviews", False)

# OpenShift's registry mirror configuration (read when served: pivoter pulls through the mirrors)
IMAGE_DIGEST_MIRROR_SETS = Resource(
    "config.openshift.io/v1", "ImageDigestMirrorSet", "imagedigestmirrorsets", namespaced=False
)
IMAGE_TAG_MIRROR_SETS = Resource(
    "config.openshift.io/v1", "ImageTagMirrorSet", "imagetagmirrorsets", namespaced=False
)
IMAGE_CONTENT_SOURCE_POLICIES = Resource(
    "operator.openshift.io/v1alpha1",
    "ImageContentSourcePolicy",
    "imagecontentsourcepolicies",
    namespaced=False,
)
