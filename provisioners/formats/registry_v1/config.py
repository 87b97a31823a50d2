"""The BundleDeployment ``spec.config`` keys registry+v1 understands, parsed and checked.

Keys (all optional; documented in docs/registry-v1.md):

``installNamespace``
    Where the operator's namespaced objects go. Default: the CSV annotation
    ``operatorframework.io/suggested-namespace``, else ``<package>-system``.
``targetNamespaces`` / ``watchNamespace``
    The namespaces the operator watches (``watchNamespace`` is operator-controller's single-value
    spelling). Empty or absent means all namespaces when the CSV supports that.
``deploymentConfig``
    Overrides for every operator Deployment, as OLM's Subscription ``spec.config``: ``env``,
    ``envFrom``, ``resources``, ``nodeSelector``, ``tolerations``, ``affinity``, ``volumes``,
    ``volumeMounts``, ``annotations``.
``webhookCertificates``
    ``validity`` and ``renewBefore`` of generated serving certificates, as durations
    (``8760h``, ``30m``, ``90s``).

Called by :mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn

from provisioners.formats.registry_v1 import fields
from provisioners.formats.registry_v1.errors import InvalidInstallConfigError

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^(?:([0-9]{1,9})h)?(?:([0-9]{1,9})m)?(?:([0-9]{1,9})s)?$")

CONFIG_KEYS = (
    "installNamespace",
    "targetNamespaces",
    "watchNamespace",
    "deploymentConfig",
    "webhookCertificates",
    "objectNames",
)
RENAMEABLE_KINDS = (
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
)
"""Kinds whose generated names ``objectNames`` may replace (their names carry no meaning
beyond the object; bindings follow their renamed roles)."""
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9.:_]*[A-Za-z0-9])?$")
"""RBAC names may hold capitals (OLM v0's generated ones do); webhook configurations' are DNS
subdomains, which the API server checks itself."""
DEPLOYMENT_CONFIG_KEYS = (
    "env",
    "envFrom",
    "resources",
    "nodeSelector",
    "tolerations",
    "affinity",
    "volumes",
    "volumeMounts",
    "annotations",
)
CERTIFICATE_KEYS = ("validity", "renewBefore")

DEFAULT_VALIDITY = timedelta(days=730)
DEFAULT_RENEW_BEFORE = timedelta(days=30)


@dataclass(frozen=True)
class DeploymentConfig:
    """Overrides applied to every operator Deployment (OLM's Subscription ``spec.config``)."""

    env: list[dict[str, Any]] = field(default_factory=list)
    env_from: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, Any] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    affinity: dict[str, Any] | None = None
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CertificatePolicy:
    """How long generated serving certificates live and when they are replaced."""

    validity: timedelta = DEFAULT_VALIDITY
    renew_before: timedelta = DEFAULT_RENEW_BEFORE


@dataclass(frozen=True)
class RegistryV1Config:
    """The parsed ``spec.config`` of a registry+v1 BundleDeployment."""

    install_namespace: str | None = None
    target_namespaces: tuple[str, ...] | None = None
    """None when not set; ``()`` means all namespaces."""
    deployment: DeploymentConfig = field(default_factory=DeploymentConfig)
    certificates: CertificatePolicy = field(default_factory=CertificatePolicy)
    object_names: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(kind, generated name) -> the name to give it instead (``objectNames``: how an adoption
    keeps the names another installer gave the same objects)."""


def _fail(path: str, problem: str) -> NoReturn:
    raise InvalidInstallConfigError(path, problem)


def parse_config(config: Mapping[str, Any] | None) -> RegistryV1Config:
    """Check ``config`` and return it parsed; unknown keys are refused, naming the known ones."""
    if not config:
        return RegistryV1Config()
    if not isinstance(config, Mapping):
        _fail("", f"must be a mapping, got {fields.type_name(config)}")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        _fail(unknown[0], f"unknown key; registry+v1 accepts {', '.join(CONFIG_KEYS)}")
    install_namespace = config.get("installNamespace")
    if install_namespace is not None:
        install_namespace = _namespace(install_namespace, "installNamespace")
    return RegistryV1Config(
        install_namespace=install_namespace,
        target_namespaces=_targets(config),
        deployment=_deployment_config(config.get("deploymentConfig")),
        certificates=_certificates(config.get("webhookCertificates")),
        object_names=_object_names(config.get("objectNames")),
    )


def _object_names(value: Any) -> dict[tuple[str, str], str]:
    """``{"Kind/generated-name": "name"}`` for the kinds of :data:`RENAMEABLE_KINDS`."""
    base = "objectNames"
    data = fields.mapping(value, base, _fail)
    names: dict[tuple[str, str], str] = {}
    for key, name in data.items():
        path = f"{base}[{key!r}]"
        kind, sep, generated = str(key).partition("/")
        if not sep or kind not in RENAMEABLE_KINDS or not generated:
            _fail(path, f"keys are KIND/NAME with KIND one of {', '.join(RENAMEABLE_KINDS)}")
        text = fields.string(name, path, _fail)
        if len(text) > 253 or not _NAME.match(text):
            _fail(path, f"{text!r} is not a valid object name")
        names[(kind, generated)] = text
    return names


def _namespace(value: Any, path: str) -> str:
    name = fields.string(value, path, _fail)
    if len(name) > 63 or not _DNS_LABEL.match(name):
        _fail(path, f"{name!r} is not a valid namespace name (DNS label, at most 63 characters)")
    return name


def _targets(config: Mapping[str, Any]) -> tuple[str, ...] | None:
    targets = config.get("targetNamespaces")
    watch = config.get("watchNamespace")
    if targets is not None and watch is not None:
        _fail("watchNamespace", "set either targetNamespaces or watchNamespace, not both")
    if watch is not None:
        return () if watch == "" else (_namespace(watch, "watchNamespace"),)
    if targets is None:
        return None
    items = fields.sequence(targets, "targetNamespaces", _fail)
    if items == [""]:
        return ()
    names = [_namespace(item, f"targetNamespaces[{i}]") for i, item in enumerate(items)]
    if len(set(names)) != len(names):
        _fail("targetNamespaces", f"lists a namespace twice: {names}")
    return tuple(names)


def _named_list(value: Any, path: str, *, required_keys: tuple[str, ...] = ("name",)) -> list[Any]:
    items = fields.sequence(value, path, _fail)
    for index, item in enumerate(items):
        entry = fields.mapping(item, f"{path}[{index}]", _fail)
        for key in required_keys:
            fields.string(entry.get(key), f"{path}[{index}].{key}", _fail)
    return items


def _deployment_config(value: Any) -> DeploymentConfig:
    base = "deploymentConfig"
    data = fields.mapping(value, base, _fail)
    unknown = sorted(set(data) - set(DEPLOYMENT_CONFIG_KEYS))
    if unknown:
        _fail(f"{base}.{unknown[0]}", f"unknown key; accepted: {', '.join(DEPLOYMENT_CONFIG_KEYS)}")
    env_from = fields.sequence(data.get("envFrom"), f"{base}.envFrom", _fail)
    for index, item in enumerate(env_from):
        fields.mapping(item, f"{base}.envFrom[{index}]", _fail)
    tolerations = fields.sequence(data.get("tolerations"), f"{base}.tolerations", _fail)
    for index, item in enumerate(tolerations):
        fields.mapping(item, f"{base}.tolerations[{index}]", _fail)
    resources = data.get("resources")
    affinity = data.get("affinity")
    node_selector = data.get("nodeSelector")
    return DeploymentConfig(
        env=_named_list(data.get("env"), f"{base}.env"),
        env_from=env_from,
        resources=fields.mapping(resources, f"{base}.resources", _fail)
        if resources is not None
        else None,
        node_selector=(
            fields.string_map(node_selector, f"{base}.nodeSelector", _fail)
            if node_selector is not None
            else None
        ),
        tolerations=tolerations,
        affinity=fields.mapping(affinity, f"{base}.affinity", _fail)
        if affinity is not None
        else None,
        volumes=_named_list(data.get("volumes"), f"{base}.volumes"),
        volume_mounts=_named_list(
            data.get("volumeMounts"), f"{base}.volumeMounts", required_keys=("name", "mountPath")
        ),
        annotations=fields.string_map(data.get("annotations"), f"{base}.annotations", _fail),
    )


def parse_duration(value: Any, path: str) -> timedelta:
    """A Go-style duration of hours, minutes and seconds (``8760h``, ``1h30m``, ``90s``)."""
    text = fields.string(value, path, _fail)
    match = _DURATION.match(text)
    if not match or not any(match.groups()):
        _fail(path, f"{text!r} is not a duration like 8760h, 90m or 45s")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    return timedelta(hours=hours, minutes=minutes, seconds=seconds)


def _certificates(value: Any) -> CertificatePolicy:
    base = "webhookCertificates"
    data = fields.mapping(value, base, _fail)
    unknown = sorted(set(data) - set(CERTIFICATE_KEYS))
    if unknown:
        _fail(f"{base}.{unknown[0]}", f"unknown key; accepted: {', '.join(CERTIFICATE_KEYS)}")
    validity = (
        parse_duration(data["validity"], f"{base}.validity")
        if "validity" in data
        else DEFAULT_VALIDITY
    )
    renew_before = (
        parse_duration(data["renewBefore"], f"{base}.renewBefore")
        if "renewBefore" in data
        else min(DEFAULT_RENEW_BEFORE, validity / 3)
    )
    if renew_before >= validity:
        _fail(
            f"{base}.renewBefore",
            f"({renew_before}) must be shorter than validity ({validity}), or every conversion "
            "would issue a new certificate",
        )
    return CertificatePolicy(validity=validity, renew_before=renew_before)
