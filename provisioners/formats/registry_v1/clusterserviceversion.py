"""The parts of a ClusterServiceVersion that registry+v1 conversion reads, parsed and checked.

:func:`parse_csv` turns the untrusted CSV document into a :class:`ClusterServiceVersion`: install
strategy and deployments, namespaced and cluster permissions, install modes, webhook definitions,
owned CRDs and owned APIServices. Every problem is an
:class:`~provisioners.formats.registry_v1.errors.InvalidBundleError` naming the field. Called by
:mod:`~provisioners.formats.registry_v1.bundle`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from provisioners.formats.registry_v1 import fields
from provisioners.formats.registry_v1.errors import InvalidBundleError

CSV_KIND = "ClusterServiceVersion"
CSV_API_VERSION = "operators.coreos.com/v1alpha1"

ALL_NAMESPACES = "AllNamespaces"
OWN_NAMESPACE = "OwnNamespace"
SINGLE_NAMESPACE = "SingleNamespace"
MULTI_NAMESPACE = "MultiNamespace"
INSTALL_MODES = (OWN_NAMESPACE, SINGLE_NAMESPACE, MULTI_NAMESPACE, ALL_NAMESPACES)

VALIDATING = "ValidatingAdmissionWebhook"
MUTATING = "MutatingAdmissionWebhook"
CONVERSION = "ConversionWebhook"
WEBHOOK_TYPES = (VALIDATING, MUTATING, CONVERSION)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_FAILURE_POLICIES = ("Fail", "Ignore")
_SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
_MATCH_POLICIES = ("Exact", "Equivalent")
_REINVOCATION = ("Never", "IfNeeded")


@dataclass(frozen=True)
class DeploymentSpec:
    """One entry of ``spec.install.spec.deployments``."""

    name: str
    spec: dict[str, Any]
    labels: dict[str, str]

    @property
    def service_account(self) -> str:
        """The pod's service account (``default`` when the template names none)."""
        pod = self.spec.get("template", {}).get("spec", {})
        return str(pod.get("serviceAccountName") or pod.get("serviceAccount") or "default")


@dataclass(frozen=True)
class PermissionSet:
    """One entry of ``permissions`` or ``clusterPermissions``: RBAC rules for a service account."""

    service_account: str
    rules: list[dict[str, Any]]


@dataclass(frozen=True)
class WebhookDefinition:
    """One entry of ``spec.webhookdefinitions``, with OLM's defaults filled in."""

    index: int
    type: str
    generate_name: str
    deployment_name: str
    container_port: int
    target_port: int | str
    path: str
    admission_review_versions: list[str]
    side_effects: str | None
    failure_policy: str | None
    rules: list[dict[str, Any]]
    object_selector: dict[str, Any] | None
    match_policy: str | None
    timeout_seconds: int | None
    reinvocation_policy: str | None
    conversion_crds: list[str]

    @property
    def field(self) -> str:
        """The field path of this definition in the CSV."""
        return f"spec.webhookdefinitions[{self.index}]"


@dataclass(frozen=True)
class APIServiceDefinition:
    """One entry of ``spec.apiservicedefinitions.owned``: an API group version the operator
    serves itself, behind an APIService."""

    index: int
    group: str
    version: str
    name: str
    """The resource's plural name (``flunders``)."""
    kind: str
    deployment_name: str
    container_port: int

    @property
    def field(self) -> str:
        """The field path of this definition in the CSV."""
        return f"spec.apiservicedefinitions.owned[{self.index}]"

    @property
    def apiservice_name(self) -> str:
        """The APIService's name, ``<version>.<group>`` (the API server requires it)."""
        return f"{self.version}.{self.group}"


@dataclass(frozen=True)
class ClusterServiceVersion:
    """What conversion needs from a CSV; ``raw`` keeps the document for reference."""

    name: str
    version: str
    annotations: dict[str, str]
    install_modes: dict[str, bool]
    deployments: list[DeploymentSpec]
    permissions: list[PermissionSet]
    cluster_permissions: list[PermissionSet]
    webhooks: list[WebhookDefinition]
    owned_crds: list[str]
    owned_apiservices: list[APIServiceDefinition]
    raw: dict[str, Any] = field(repr=False)

    @property
    def where(self) -> str:
        """How errors name this CSV."""
        return f"{CSV_KIND} {self.name}"

    def supports(self, mode: str) -> bool:
        """Whether the CSV declares install mode ``mode`` as supported."""
        return self.install_modes.get(mode, False)


def parse_csv(document: dict[str, Any], source: str) -> ClusterServiceVersion:
    """Check and parse a CSV document read from ``source`` (a file name, for messages)."""
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    where = f"{source} ({CSV_KIND} {name})" if isinstance(name, str) and name else source

    def fail(path: str, problem: str) -> NoReturn:
        raise InvalidBundleError(where, path, problem)

    if document.get("apiVersion") != CSV_API_VERSION:
        fail("apiVersion", f"must be {CSV_API_VERSION}, got {document.get('apiVersion')!r}")
    metadata = fields.mapping(document.get("metadata"), "metadata", fail, required=True)
    name = fields.string(metadata.get("name"), "metadata.name", fail)
    annotations = fields.string_map(metadata.get("annotations"), "metadata.annotations", fail)
    spec = fields.mapping(document.get("spec"), "spec", fail, required=True)
    version = spec.get("version")
    install = fields.mapping(spec.get("install"), "spec.install", fail, required=True)
    strategy = fields.string(install.get("strategy"), "spec.install.strategy", fail)
    if strategy != "deployment":
        fail(
            "spec.install.strategy",
            f"must be 'deployment' (the only OLM strategy), got {strategy!r}",
        )
    strategy_spec = fields.mapping(install.get("spec"), "spec.install.spec", fail, required=True)
    return ClusterServiceVersion(
        name=name,
        version=str(version) if version is not None else "",
        annotations=annotations,
        install_modes=_install_modes(spec, fail),
        deployments=_deployments(strategy_spec, fail),
        permissions=_permissions(strategy_spec, "permissions", fail),
        cluster_permissions=_permissions(strategy_spec, "clusterPermissions", fail),
        webhooks=_webhooks(spec, fail),
        owned_crds=_owned_crds(spec, fail),
        owned_apiservices=_owned_apiservices(spec, fail),
        raw=document,
    )


def _install_modes(spec: dict[str, Any], fail: fields.Fail) -> dict[str, bool]:
    modes: dict[str, bool] = {}
    for index, item in enumerate(
        fields.sequence(spec.get("installModes"), "spec.installModes", fail, required=True)
    ):
        path = f"spec.installModes[{index}]"
        entry = fields.mapping(item, path, fail)
        mode = fields.string(entry.get("type"), f"{path}.type", fail)
        if mode not in INSTALL_MODES:
            fail(
                f"{path}.type", f"unknown install mode {mode!r}; known: {', '.join(INSTALL_MODES)}"
            )
        supported = entry.get("supported")
        if not isinstance(supported, bool):
            fail(f"{path}.supported", f"must be true or false, got {supported!r}")
        if mode in modes:
            fail(f"{path}.type", f"install mode {mode} is listed twice")
        modes[mode] = supported
    if not any(modes.values()):
        fail("spec.installModes", "no install mode is supported; the operator cannot be installed")
    return modes


def _deployments(strategy_spec: dict[str, Any], fail: fields.Fail) -> list[DeploymentSpec]:
    base = "spec.install.spec.deployments"
    items = fields.sequence(strategy_spec.get("deployments"), base, fail, required=True)
    if not items:
        fail(base, "lists no deployments; a registry+v1 operator needs at least one")
    result: list[DeploymentSpec] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        path = f"{base}[{index}]"
        entry = fields.mapping(item, path, fail)
        name = fields.string(entry.get("name"), f"{path}.name", fail)
        if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
            fail(f"{path}.name", f"{name!r} is not a valid Deployment name (DNS subdomain)")
        if name in seen:
            fail(f"{path}.name", f"duplicate deployment name {name!r} (also {base}[{seen[name]}])")
        seen[name] = index
        spec = fields.mapping(entry.get("spec"), f"{path}.spec", fail, required=True)
        template = fields.mapping(
            spec.get("template"), f"{path}.spec.template", fail, required=True
        )
        pod = fields.mapping(
            template.get("spec"), f"{path}.spec.template.spec", fail, required=True
        )
        containers = fields.sequence(
            pod.get("containers"), f"{path}.spec.template.spec.containers", fail, required=True
        )
        for c_index, container in enumerate(containers):
            c_path = f"{path}.spec.template.spec.containers[{c_index}]"
            fields.string(
                fields.mapping(container, c_path, fail).get("name"), f"{c_path}.name", fail
            )
        fields.mapping(
            fields.mapping(spec.get("selector"), f"{path}.spec.selector", fail, required=True).get(
                "matchLabels"
            ),
            f"{path}.spec.selector.matchLabels",
            fail,
        )
        labels = fields.string_map(entry.get("label"), f"{path}.label", fail)
        result.append(DeploymentSpec(name=name, spec=spec, labels=labels))
    return result


def _permissions(strategy_spec: dict[str, Any], key: str, fail: fields.Fail) -> list[PermissionSet]:
    base = f"spec.install.spec.{key}"
    result: list[PermissionSet] = []
    for index, item in enumerate(fields.sequence(strategy_spec.get(key), base, fail)):
        path = f"{base}[{index}]"
        entry = fields.mapping(item, path, fail)
        account = fields.string(entry.get("serviceAccountName"), f"{path}.serviceAccountName", fail)
        rules = fields.sequence(entry.get("rules"), f"{path}.rules", fail)
        for r_index, rule in enumerate(rules):
            r_path = f"{path}.rules[{r_index}]"
            rule_map = fields.mapping(rule, r_path, fail)
            fields.string_list(rule_map.get("verbs"), f"{r_path}.verbs", fail, required=True)
        result.append(PermissionSet(service_account=account, rules=rules))
    return result


def _owned_crds(spec: dict[str, Any], fail: fields.Fail) -> list[str]:
    base = "spec.customresourcedefinitions"
    owned = fields.sequence(
        fields.mapping(spec.get("customresourcedefinitions"), base, fail).get("owned"),
        f"{base}.owned",
        fail,
    )
    return [
        fields.string(
            fields.mapping(item, f"{base}.owned[{index}]", fail).get("name"),
            f"{base}.owned[{index}].name",
            fail,
        )
        for index, item in enumerate(owned)
    ]


def _owned_apiservices(spec: dict[str, Any], fail: fields.Fail) -> list[APIServiceDefinition]:
    base = "spec.apiservicedefinitions.owned"
    owned = fields.sequence(
        fields.mapping(spec.get("apiservicedefinitions"), "spec.apiservicedefinitions", fail).get(
            "owned"
        ),
        base,
        fail,
    )
    result: list[APIServiceDefinition] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(owned):
        path = f"{base}[{index}]"
        entry = fields.mapping(item, path, fail)
        group = fields.string(entry.get("group"), f"{path}.group", fail)
        if not _DNS_SUBDOMAIN.match(group) or len(group) > 253 or "." not in group:
            fail(
                f"{path}.group",
                f"{group!r} is not a fully qualified API group (a DNS subdomain such as "
                "metrics.example.com)",
            )
        version = fields.string(entry.get("version"), f"{path}.version", fail)
        if not _DNS_LABEL.match(version) or len(version) > 63:
            fail(f"{path}.version", f"{version!r} is not a valid API version (e.g. v1alpha1)")
        name = fields.string(entry.get("name"), f"{path}.name", fail)
        kind = fields.string(entry.get("kind"), f"{path}.kind", fail)
        deployment = fields.string(entry.get("deploymentName"), f"{path}.deploymentName", fail)
        port = fields.port(entry.get("containerPort"), f"{path}.containerPort", fail, 443)
        definition = APIServiceDefinition(
            index=index,
            group=group,
            version=version,
            name=name,
            kind=kind,
            deployment_name=deployment,
            container_port=port,
        )
        # Several resources (kinds) of one group version are served by one APIService.
        first = seen.setdefault(definition.apiservice_name, index)
        other = result[first] if first != index else definition
        if (other.deployment_name, other.container_port) != (deployment, port):
            fail(
                f"{path}.deploymentName",
                f"{definition.apiservice_name} is also served by {base}[{first}] through "
                f"deployment {other.deployment_name!r} port {other.container_port}; "
                "one APIService has one backend",
            )
        result.append(definition)
    return result


def _webhooks(spec: dict[str, Any], fail: fields.Fail) -> list[WebhookDefinition]:
    base = "spec.webhookdefinitions"
    result: list[WebhookDefinition] = []
    names: dict[tuple[str, str], int] = {}
    for index, item in enumerate(fields.sequence(spec.get("webhookdefinitions"), base, fail)):
        path = f"{base}[{index}]"
        entry = fields.mapping(item, path, fail)
        kind = fields.string(entry.get("type"), f"{path}.type", fail)
        if kind not in WEBHOOK_TYPES:
            fail(
                f"{path}.type", f"unknown webhook type {kind!r}; known: {', '.join(WEBHOOK_TYPES)}"
            )
        generate_name = fields.string(entry.get("generateName"), f"{path}.generateName", fail)
        if not _DNS_SUBDOMAIN.match(generate_name) or len(generate_name) > 253:
            fail(f"{path}.generateName", f"{generate_name!r} is not a valid DNS subdomain")
        if kind != CONVERSION and "." not in generate_name:
            fail(
                f"{path}.generateName",
                f"{generate_name!r} must be fully qualified (at least three segments, e.g. "
                "vwidget.example.com): it becomes the admission webhook's name",
            )
        key = (kind, generate_name)
        if key in names:
            fail(f"{path}.generateName", f"{generate_name!r} repeats {base}[{names[key]}]")
        names[key] = index
        deployment = fields.string(entry.get("deploymentName"), f"{path}.deploymentName", fail)
        container_port = fields.port(entry.get("containerPort"), f"{path}.containerPort", fail, 443)
        target = entry.get("targetPort")
        target_port: int | str
        if isinstance(target, str) and target:
            target_port = target
        else:
            target_port = fields.port(target, f"{path}.targetPort", fail, container_port)
        webhook_path = fields.string(
            entry.get("webhookPath"), f"{path}.webhookPath", fail, required=False
        )
        if webhook_path and not webhook_path.startswith("/"):
            fail(f"{path}.webhookPath", f"must start with '/', got {webhook_path!r}")
        versions = fields.string_list(
            entry.get("admissionReviewVersions"),
            f"{path}.admissionReviewVersions",
            fail,
            required=True,
        )
        if not versions:
            fail(f"{path}.admissionReviewVersions", "must list at least one version (e.g. v1)")
        side_effects = _choice(entry, "sideEffects", _SIDE_EFFECTS, path, fail)
        if kind != CONVERSION and side_effects is None:
            fail(
                f"{path}.sideEffects",
                f"is required for a {kind}; one of {', '.join(_SIDE_EFFECTS)}",
            )
        rules = fields.sequence(entry.get("rules"), f"{path}.rules", fail)
        for r_index, rule in enumerate(rules):
            r_path = f"{path}.rules[{r_index}]"
            rule_map = fields.mapping(rule, r_path, fail)
            for key_name in ("operations", "apiGroups", "apiVersions", "resources"):
                fields.sequence(rule_map.get(key_name), f"{r_path}.{key_name}", fail, required=True)
        if kind != CONVERSION and not rules:
            fail(f"{path}.rules", f"a {kind} needs at least one rule saying what it intercepts")
        conversion_crds = fields.string_list(
            entry.get("conversionCRDs"), f"{path}.conversionCRDs", fail
        )
        if kind == CONVERSION and not conversion_crds:
            fail(f"{path}.conversionCRDs", "a ConversionWebhook must name the CRDs it converts")
        timeout = entry.get("timeoutSeconds")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 30
        ):
            fail(f"{path}.timeoutSeconds", f"must be between 1 and 30, got {timeout!r}")
        object_selector = entry.get("objectSelector")
        if object_selector is not None:
            fields.mapping(object_selector, f"{path}.objectSelector", fail)
        result.append(
            WebhookDefinition(
                index=index,
                type=kind,
                generate_name=generate_name,
                deployment_name=deployment,
                container_port=container_port,
                target_port=target_port,
                path=webhook_path or "/",
                admission_review_versions=versions,
                side_effects=side_effects,
                failure_policy=_choice(entry, "failurePolicy", _FAILURE_POLICIES, path, fail),
                rules=rules,
                object_selector=object_selector,
                match_policy=_choice(entry, "matchPolicy", _MATCH_POLICIES, path, fail),
                timeout_seconds=timeout,
                reinvocation_policy=_choice(entry, "reinvocationPolicy", _REINVOCATION, path, fail),
                conversion_crds=conversion_crds,
            )
        )
    return result


def _choice(
    entry: dict[str, Any], key: str, allowed: tuple[str, ...], path: str, fail: fields.Fail
) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if value not in allowed:
        fail(f"{path}.{key}", f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)
