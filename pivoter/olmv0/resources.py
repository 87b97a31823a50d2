"""OLM v0's API objects as pivoter reads and writes them (``operators.coreos.com``), and the
labels and annotations OLM v0 puts on what it installs.

Used by the rest of :mod:`pivoter.olmv0`; nothing here talks to the cluster.
"""

from __future__ import annotations

from pivoter.kube import Resource

__all__ = [
    "ANNOTATION_OPERATOR_GROUP",
    "ANNOTATION_OPERATOR_NAMESPACE",
    "ANNOTATION_TARGET_NAMESPACES",
    "CATALOG_SOURCES",
    "CSVS",
    "INSTALL_PLANS",
    "LABEL_OWNER",
    "LABEL_OWNER_KIND",
    "LABEL_OWNER_NAMESPACE",
    "LABEL_WEBHOOK_GENERATE_NAME",
    "OPERATOR_CONDITIONS",
    "OPERATOR_GROUPS",
    "OWNED_CLUSTER",
    "OWNED_NAMESPACED",
    "ROLES",
    "ROLE_BINDINGS",
    "SUBSCRIPTIONS",
    "WEBHOOK_CONFIGURATIONS",
]

GROUP = "operators.coreos.com"
SUBSCRIPTIONS = Resource(f"{GROUP}/v1alpha1", "Subscription", "subscriptions", True)
CSVS = Resource(f"{GROUP}/v1alpha1", "ClusterServiceVersion", "clusterserviceversions", True)
INSTALL_PLANS = Resource(f"{GROUP}/v1alpha1", "InstallPlan", "installplans", True)
CATALOG_SOURCES = Resource(f"{GROUP}/v1alpha1", "CatalogSource", "catalogsources", True)
OPERATOR_GROUPS = Resource(f"{GROUP}/v1", "OperatorGroup", "operatorgroups", True)
OPERATOR_CONDITIONS = Resource(f"{GROUP}/v2", "OperatorCondition", "operatorconditions", True)

ANNOTATION_OPERATOR_GROUP = "olm.operatorGroup"
ANNOTATION_OPERATOR_NAMESPACE = "olm.operatorNamespace"
ANNOTATION_TARGET_NAMESPACES = "olm.targetNamespaces"
"""On a CSV: the namespaces its OperatorGroup targets, comma-separated ("" for all)."""
LABEL_OWNER = "olm.owner"
LABEL_OWNER_NAMESPACE = "olm.owner.namespace"
LABEL_OWNER_KIND = "olm.owner.kind"
"""OLM v0's owner labels: the CSV's finalizer deletes the ClusterRoles, ClusterRoleBindings and
webhook configurations that carry them."""
LABEL_WEBHOOK_GENERATE_NAME = "olm.webhook-description-generate-name"
"""On a webhook configuration OLM v0 created: the CSV webhook definition's ``generateName``."""

RBAC = "rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
ROLES = Resource(RBAC, "Role", "roles", True)
ROLE_BINDINGS = Resource(RBAC, "RoleBinding", "rolebindings", True)
CLUSTER_ROLES = Resource(RBAC, "ClusterRole", "clusterroles", False)
CLUSTER_ROLE_BINDINGS = Resource(RBAC, "ClusterRoleBinding", "clusterrolebindings", False)
WEBHOOK_CONFIGURATIONS = (
    Resource(ADMISSION, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False),
    Resource(ADMISSION, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False),
)
OWNED_NAMESPACED = (
    Resource("apps/v1", "Deployment", "deployments", True),
    Resource("v1", "Service", "services", True),
    Resource("v1", "Secret", "secrets", True),
    Resource("v1", "ConfigMap", "configmaps", True),
    Resource("v1", "ServiceAccount", "serviceaccounts", True),
    ROLES,
    ROLE_BINDINGS,
)
"""The namespaced kinds OLM v0 writes for a CSV (its Deployments, the bundle's objects, the
generated RBAC and certificate Secrets)."""
OWNED_CLUSTER = (CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, *WEBHOOK_CONFIGURATIONS)
"""The cluster-scoped kinds OLM v0 writes for a CSV and labels as its own."""
