"""APIServices a CSV owns (``spec.apiservicedefinitions.owned``): aggregated API servers.

An operator that serves an API group version itself (not through CRDs) registers it with the
API server's aggregation layer: an ``apiregistration.k8s.io/v1`` APIService ``<version>.<group>``
sends every request for that group version to a Service in front of the operator's pods, and
trusts the certificate served there through its ``caBundle``. pivoter installs it as OLM v0
does, so that an operator adopted from OLM v0 keeps its objects (same names, same certificate):

* the Deployment named by ``deploymentName`` is a serving endpoint
  (:func:`~provisioners.formats.registry_v1.webhooks.serving_endpoints`): one Service
  ``<deployment>-service`` with a port ``containerPort`` (default 443) to the same port of the
  pods, and one serving certificate, mounted at ``/apiserver.local.config/certificates``
  (``apiserver.crt``, ``apiserver.key``), shared with the webhooks the Deployment serves and
  rotated with them;
* one APIService per group version, ``groupPriorityMinimum`` 2000 and ``versionPriority`` 15
  (OLM v0's values), pointing at that Service and port, with the certificate's CA bundle;
* the delegated-authentication bindings of the Deployment's service account
  (:func:`~provisioners.formats.registry_v1.rbac.auth_delegation_objects`).

Called by :mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioners.formats.registry_v1.clusterserviceversion import ClusterServiceVersion
from provisioners.formats.registry_v1.installmode import InstallTarget
from provisioners.formats.registry_v1.rbac import auth_delegation_objects
from provisioners.formats.registry_v1.webhooks import (
    ServedPort,
    ServingEndpoint,
    check_deployment,
)

APIREGISTRATION_API_VERSION = "apiregistration.k8s.io/v1"
GROUP_PRIORITY_MINIMUM = 2000
"""OLM v0's ``groupPriorityMinimum``: above the built-in groups' defaults, below OpenShift's."""
VERSION_PRIORITY = 15
"""OLM v0's ``versionPriority`` for every version it registers."""


def apiservice_ports(
    csv: ClusterServiceVersion, deployments: Mapping[str, Any]
) -> dict[str, list[ServedPort]]:
    """Check the owned APIService definitions; the ports they need, per serving Deployment."""
    ports: dict[str, list[ServedPort]] = {}
    for definition in csv.owned_apiservices:
        check_deployment(
            csv, deployments, definition.deployment_name, f"{definition.field}.deploymentName"
        )
        ports.setdefault(definition.deployment_name, []).append(
            ServedPort(
                definition.container_port,
                definition.container_port,
                definition.field,
                target_key="containerPort",
            )
        )
    return ports


def apiservice_objects(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    endpoints: Mapping[str, ServingEndpoint],
) -> list[dict[str, Any]]:
    """The APIServices and the delegated-authentication bindings of their servers.
    ``endpoints`` come from :func:`~provisioners.formats.registry_v1.webhooks.serving_endpoints`
    over :func:`apiservice_ports`."""
    accounts = {d.name: d.service_account for d in csv.deployments}
    apiservices: dict[str, dict[str, Any]] = {}
    servers: list[str] = []
    for definition in csv.owned_apiservices:
        endpoint = endpoints[definition.deployment_name]
        if definition.deployment_name not in servers:
            servers.append(definition.deployment_name)
        # Kinds of one group version share the APIService (the CSV parser checked that they
        # name the same backend).
        apiservices.setdefault(
            definition.apiservice_name,
            {
                "apiVersion": APIREGISTRATION_API_VERSION,
                "kind": "APIService",
                "metadata": {"name": definition.apiservice_name},
                "spec": {
                    "group": definition.group,
                    "version": definition.version,
                    "groupPriorityMinimum": GROUP_PRIORITY_MINIMUM,
                    "versionPriority": VERSION_PRIORITY,
                    "service": {
                        "namespace": endpoint.namespace,
                        "name": endpoint.service,
                        "port": definition.container_port,
                    },
                    "caBundle": endpoint.ca_bundle,
                },
            },
        )
    bindings = [
        obj
        for deployment in servers
        for obj in auth_delegation_objects(
            endpoints[deployment].service, accounts[deployment], install
        )
    ]
    return [*bindings, *apiservices.values()]
