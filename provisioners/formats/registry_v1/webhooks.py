"""Serving endpoints and webhooks of a CSV: Service, serving certificate, configurations.

A Deployment that serves webhooks (``spec.webhookdefinitions``) or APIServices
(``spec.apiservicedefinitions.owned``, :mod:`~provisioners.formats.registry_v1.apiservices`) is
a serving endpoint, and gets, as OLM v0 gives it, one Service and one certificate for all it
serves: a Service named ``<deployment>-service`` selecting its pods (one port per
``containerPort``, to its ``targetPort``), a TLS Secret ``<deployment>-service-cert`` (see
:mod:`~provisioners.formats.registry_v1.certificates` for issuing and rotation) mounted at
``/tmp/k8s-webhook-server/serving-certs`` and ``/apiserver.local.config/certificates``, and a pod
template annotation with the certificate's hash so pods restart when it rotates
(:func:`serving_endpoints`). rukpak refuses webhooks; pivoter installs them as OLM does: each
admission webhook becomes a Validating/MutatingWebhookConfiguration with the CA bundle injected
(limited to the target namespaces unless the operator watches all of them); each conversion
webhook sets ``spec.conversion`` of the CRDs it names (:func:`webhook_objects`). Called by
:mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from provisioners.formats.registry_v1.certificates import (
    CertificatePlan,
    issuing_ca,
    plan_certificate,
    secret_object,
)
from provisioners.formats.registry_v1.clusterserviceversion import (
    CONVERSION,
    MUTATING,
    ClusterServiceVersion,
    WebhookDefinition,
)
from provisioners.formats.registry_v1.config import CertificatePolicy
from provisioners.formats.registry_v1.errors import InvalidBundleError, UnsupportedBundleError
from provisioners.formats.registry_v1.installmode import InstallTarget
from provisioners.formats.registry_v1.names import bounded_name

SecretLookup = Callable[[str, str], Mapping[str, Any] | None]
"""Returns the Secret object ``(namespace, name)`` as stored in the cluster, or None."""

WEBHOOK_CERT_VOLUME = "webhook-cert"
WEBHOOK_CERT_PATH = "/tmp/k8s-webhook-server/serving-certs"
APISERVICE_CERT_VOLUME = "apiservice-cert"
APISERVICE_CERT_PATH = "/apiserver.local.config/certificates"
CERT_HASH_ANNOTATION = "olmcahash"
"""On the pod template: sha256 of the issuing CA's PEM, as OLM v0 writes it, so pods restart
when the certificate is re-issued and an operator adopted from OLM v0 keeps its pod template."""
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class ServedPort:
    """A port the Service of a serving Deployment exposes, and the CSV field that asks for it."""

    port: int
    target: int | str
    definition: str
    """The field path of the definition asking for it (``spec.webhookdefinitions[0]``)."""
    target_key: str = "targetPort"
    """The key of the definition that sets ``target``."""


@dataclass(frozen=True)
class ServingEndpoint:
    """The Service and certificate of one Deployment that serves webhooks or APIServices."""

    deployment: str
    service: str
    namespace: str
    plan: CertificatePlan

    @property
    def ca_bundle(self) -> str:
        """The CA bundle clients of the Service trust, base64 (``caBundle`` fields)."""
        return base64.b64encode(self.plan.certificate.ca_bundle).decode()


@dataclass
class ServingResult:
    """The Services and Secrets of the serving Deployments, and their endpoints by name."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    endpoints: dict[str, ServingEndpoint] = field(default_factory=dict)

    @property
    def certificates(self) -> dict[str, CertificatePlan]:
        """The certificate decision per serving Deployment."""
        return {name: endpoint.plan for name, endpoint in self.endpoints.items()}


def service_name(deployment: str) -> str:
    """The generated Service of a serving Deployment."""
    return bounded_name(deployment, "service", label=True)


def secret_name(deployment: str) -> str:
    """The Secret holding a serving Deployment's certificate."""
    return bounded_name(deployment, "service-cert")


def check_deployment(
    csv: ClusterServiceVersion, deployments: Mapping[str, Any], name: str, path: str
) -> None:
    """Fail unless ``name`` (read at ``path``) is a Deployment of the install strategy."""
    if name not in deployments:
        raise InvalidBundleError(
            csv.where,
            path,
            f"names deployment {name!r}, which spec.install.spec.deployments does not define "
            f"(defined: {', '.join(deployments)})",
        )


def webhook_ports(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    deployments: Mapping[str, Any],
    crds: Mapping[str, dict[str, Any]],
) -> dict[str, list[ServedPort]]:
    """Check the webhook definitions; the ports they need, per serving Deployment."""
    ports: dict[str, list[ServedPort]] = {}
    converted: dict[str, int] = {}
    for webhook in csv.webhooks:
        check_deployment(
            csv, deployments, webhook.deployment_name, f"{webhook.field}.deploymentName"
        )
        if webhook.type == CONVERSION:
            _check_conversion(csv, install, webhook, crds, converted)
        ports.setdefault(webhook.deployment_name, []).append(
            ServedPort(webhook.container_port, webhook.target_port, webhook.field)
        )
    return ports


def serving_endpoints(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    deployments: dict[str, dict[str, Any]],
    ports: Mapping[str, list[ServedPort]],
    *,
    lookup: SecretLookup | None,
    now: datetime | None,
    policy: CertificatePolicy,
) -> ServingResult:
    """A Service and a certificate Secret for each Deployment of ``ports`` (in its order);
    mounts the certificate into ``deployments``."""
    result = ServingResult()
    namespace = install.install_namespace
    for deployment_name, served in ports.items():
        deployment = deployments[deployment_name]
        service = service_name(deployment_name)
        secret = secret_name(deployment_name)
        result.objects.append(_service(csv, service, namespace, deployment, served))
        plan = plan_certificate(
            lookup(namespace, secret) if lookup else None,
            service=service,
            namespace=namespace,
            now=now,
            policy=policy,
        )
        result.endpoints[deployment_name] = ServingEndpoint(
            deployment=deployment_name, service=service, namespace=namespace, plan=plan
        )
        result.objects.append(secret_object(secret, namespace, plan.certificate))
        _mount_certificate(deployment, secret, plan)
    return result


def webhook_objects(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    crds: dict[str, dict[str, Any]],
    endpoints: Mapping[str, ServingEndpoint],
) -> list[dict[str, Any]]:
    """The webhook configurations; sets ``spec.conversion`` of the converted ``crds``.
    ``endpoints`` come from :func:`serving_endpoints` over :func:`webhook_ports`."""
    objects: list[dict[str, Any]] = []
    for webhook in csv.webhooks:
        endpoint = endpoints[webhook.deployment_name]
        client = {
            "service": {
                "namespace": endpoint.namespace,
                "name": endpoint.service,
                "path": webhook.path,
                "port": webhook.container_port,
            },
            "caBundle": endpoint.ca_bundle,
        }
        if webhook.type == CONVERSION:
            for crd_name in webhook.conversion_crds:
                crds[crd_name].setdefault("spec", {})["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client,
                        "conversionReviewVersions": list(webhook.admission_review_versions),
                    },
                }
        else:
            objects.append(_configuration(csv, install, webhook, client))
    return objects


def _check_conversion(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    webhook: WebhookDefinition,
    crds: Mapping[str, dict[str, Any]],
    converted: dict[str, int],
) -> None:
    if not install.all_namespaces:
        raise UnsupportedBundleError(
            csv.where,
            f"{webhook.field}.type",
            f"a ConversionWebhook converts the CRD's objects in every namespace, so (as in OLM) "
            f"it needs install mode AllNamespaces, not {install.mode}",
        )
    for index, crd_name in enumerate(webhook.conversion_crds):
        where = f"{webhook.field}.conversionCRDs[{index}]"
        if crd_name not in crds:
            raise InvalidBundleError(
                csv.where, where, f"names CRD {crd_name!r}, which the bundle does not contain"
            )
        if crd_name in converted:
            raise InvalidBundleError(
                csv.where,
                where,
                f"CRD {crd_name!r} already has a conversion webhook "
                f"(spec.webhookdefinitions[{converted[crd_name]}])",
            )
        converted[crd_name] = webhook.index


def _service(
    csv: ClusterServiceVersion,
    name: str,
    namespace: str,
    deployment: dict[str, Any],
    served: list[ServedPort],
) -> dict[str, Any]:
    selector = dict(deployment["spec"].get("selector", {}).get("matchLabels") or {})
    if not selector:
        selector = dict(deployment["spec"]["template"].get("metadata", {}).get("labels") or {})
    deployment_name = deployment["metadata"]["name"]
    if not selector:
        raise InvalidBundleError(
            csv.where,
            f"{served[0].definition}.deploymentName",
            f"deployment {deployment_name!r} has no selector.matchLabels or pod "
            "labels, so no Service can select its pods",
        )
    ports: dict[int, int | str] = {}
    for wanted in served:
        target = ports.setdefault(wanted.port, wanted.target)
        if target != wanted.target:
            raise InvalidBundleError(
                csv.where,
                f"{wanted.definition}.{wanted.target_key}",
                f"containerPort {wanted.port} already maps to targetPort {target} "
                f"for deployment {deployment_name!r}; one Service port cannot reach two",
            )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": selector,
            "ports": [
                {"name": str(port), "port": port, "protocol": "TCP", "targetPort": target}
                for port, target in sorted(ports.items())
            ],
        },
    }


def _mount_certificate(deployment: dict[str, Any], secret: str, plan: CertificatePlan) -> None:
    """Mount the certificate as OLM v0 does, in its order (so that an operator adopted from
    OLM v0 keeps its pod template): the ``apiservice-cert`` volume, then ``webhook-cert``, each
    replacing a volume of that name in place or appended; in each container a mount of that
    volume is kept, a mount at its path is replaced in place, else one is appended."""
    template = deployment["spec"]["template"]
    pod = template["spec"]
    certs = (
        (APISERVICE_CERT_VOLUME, APISERVICE_CERT_PATH, ("apiserver.crt", "apiserver.key")),
        (WEBHOOK_CERT_VOLUME, WEBHOOK_CERT_PATH, ("tls.crt", "tls.key")),
    )
    volumes = list(pod.get("volumes", []))
    for name, path, (crt, key) in certs:
        volume = {
            "name": name,
            "secret": {
                "secretName": secret,
                "items": [{"key": "tls.crt", "path": crt}, {"key": "tls.key", "path": key}],
            },
        }
        index = next((i for i, v in enumerate(volumes) if v.get("name") == name), None)
        if index is None:
            volumes.append(volume)
        else:
            volumes[index] = volume
        for container in pod.get("containers", []):
            mounts = list(container.get("volumeMounts", []))
            mount = {"name": name, "mountPath": path}
            at = next(
                (
                    i
                    for i, m in enumerate(mounts)
                    if m.get("name") == name or m.get("mountPath") == path
                ),
                None,
            )
            if at is None:
                mounts.append(mount)
            elif mounts[at].get("name") != name:
                mounts[at] = mount
            container["volumeMounts"] = mounts
    # A volume the bundle meant for its own copy of the certificate is now mounted nowhere.
    used = {
        m.get("name")
        for c in (*pod.get("containers", []), *pod.get("initContainers", []))
        for m in c.get("volumeMounts", [])
    }
    pod["volumes"] = [v for v in volumes if v.get("name") in used]
    digest = hashlib.sha256(issuing_ca(plan.certificate)).hexdigest()
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[CERT_HASH_ANNOTATION] = digest


def _configuration(
    csv: ClusterServiceVersion,
    install: InstallTarget,
    webhook: WebhookDefinition,
    client: dict[str, Any],
) -> dict[str, Any]:
    kind = (
        "MutatingWebhookConfiguration"
        if webhook.type == MUTATING
        else "ValidatingWebhookConfiguration"
    )
    entry: dict[str, Any] = {
        "name": webhook.generate_name,
        "clientConfig": client,
        "rules": webhook.rules,
        "sideEffects": webhook.side_effects,
        "admissionReviewVersions": list(webhook.admission_review_versions),
        "failurePolicy": webhook.failure_policy or "Fail",
        "matchPolicy": webhook.match_policy or "Equivalent",
        "timeoutSeconds": webhook.timeout_seconds or 10,
    }
    if webhook.object_selector is not None:
        entry["objectSelector"] = webhook.object_selector
    if webhook.type == MUTATING:
        entry["reinvocationPolicy"] = webhook.reinvocation_policy or "Never"
    if not install.all_namespaces:
        entry["namespaceSelector"] = {
            "matchExpressions": [
                {
                    "key": NAMESPACE_NAME_LABEL,
                    "operator": "In",
                    "values": sorted(install.target_namespaces),
                }
            ]
        }
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": kind,
        "metadata": {"name": bounded_name(csv.name, webhook.generate_name)},
        "webhooks": [entry],
    }
