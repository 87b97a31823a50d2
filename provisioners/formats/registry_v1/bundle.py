"""Reading a registry+v1 bundle tree: ``metadata/`` annotations, dependencies and properties,
and the flat ``manifests/`` directory with exactly one ClusterServiceVersion.

:func:`read_bundle` returns a :class:`RegistryBundle`; nothing is converted here. The media type
annotation must say ``registry+v1`` and the package and channel annotations must be present.
Every file is read through :func:`~provisioners.formats.manifests.load_documents`, the guarded
reader with the bundle as its root: a FIFO, a device, a link out of the bundle (``metadata/``
itself included) or a file over the limit is refused in one line, never opened.
Called by :mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, NoReturn

from provisioners.formats.base import MissingManifestsError, NestedManifestsError
from provisioners.formats.manifests import ManifestLimits, directory_entries, load_documents
from provisioners.formats.registry_v1 import fields
from provisioners.formats.registry_v1.clusterserviceversion import (
    CSV_KIND,
    ClusterServiceVersion,
    parse_csv,
)
from provisioners.formats.registry_v1.errors import InvalidBundleError

MEDIA_TYPE = "registry+v1"
ANNOTATIONS_FILE = "metadata/annotations.yaml"
DEPENDENCIES_FILE = "metadata/dependencies.yaml"
PROPERTIES_FILE = "metadata/properties.yaml"

MEDIA_TYPE_ANNOTATION = "operators.operatorframework.io.bundle.mediatype.v1"
MANIFESTS_ANNOTATION = "operators.operatorframework.io.bundle.manifests.v1"
PACKAGE_ANNOTATION = "operators.operatorframework.io.bundle.package.v1"
CHANNELS_ANNOTATION = "operators.operatorframework.io.bundle.channels.v1"
DEFAULT_CHANNEL_ANNOTATION = "operators.operatorframework.io.bundle.channel.default.v1"

CRD_KIND = "CustomResourceDefinition"
CRD_API_VERSION = "apiextensions.k8s.io/v1"

_DEPENDENCY_TYPES = ("olm.gvk", "olm.package", "olm.label", "olm.constraint")

# Kinds with exactly one served apiVersion: a manifest that forgets apiVersion (real bundles do)
# gets this one, with a warning, instead of failing the whole bundle.
IMPLIED_API_VERSIONS = {
    "ConfigMap": "v1",
    "Secret": "v1",
    "Service": "v1",
    "ServiceAccount": "v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
}


@dataclass(frozen=True)
class Manifest:
    """One object of ``manifests/`` and where it came from (``file#document``)."""

    source: str
    object: dict[str, Any]

    @property
    def kind(self) -> str:
        """The object's kind."""
        return str(self.object.get("kind"))

    @property
    def name(self) -> str:
        """The object's ``metadata.name``."""
        return str(self.object["metadata"]["name"])


@dataclass(frozen=True)
class RegistryBundle:
    """A registry+v1 bundle as read from disk, before conversion."""

    package: str
    channels: list[str]
    default_channel: str
    annotations: dict[str, str]
    dependencies: list[dict[str, Any]]
    properties: list[dict[str, Any]]
    csv: ClusterServiceVersion
    crds: list[Manifest]
    others: list[Manifest]
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Things the reader repaired (e.g. an implied apiVersion), for status and Events."""


def read_bundle(root: Path, limits: ManifestLimits | None = None) -> RegistryBundle:
    """Read and check the bundle at ``root``; raise an InvalidBundleError naming the problem."""
    limits = limits or ManifestLimits()
    annotations = _annotations(root, limits)
    package = annotations[PACKAGE_ANNOTATION]
    channels = [c.strip() for c in annotations[CHANNELS_ANNOTATION].split(",") if c.strip()]
    manifests_dir = _manifests_dir(annotations)
    csv: ClusterServiceVersion | None = None
    csv_source = ""
    crds: list[Manifest] = []
    others: list[Manifest] = []
    files: list[str] = []
    warnings: list[str] = []
    for manifest in _manifests(root, manifests_dir, limits, files, warnings):
        if manifest.kind == CSV_KIND:
            if csv is not None:
                raise InvalidBundleError(
                    manifest.source,
                    "kind",
                    f"a second ClusterServiceVersion (the first is in {csv_source}); a "
                    "registry+v1 bundle has exactly one",
                )
            csv = parse_csv(manifest.object, manifest.source)
            csv_source = manifest.source
        elif manifest.kind == CRD_KIND:
            if manifest.object.get("apiVersion") != CRD_API_VERSION:
                raise InvalidBundleError(
                    manifest.source,
                    "apiVersion",
                    f"CustomResourceDefinition {manifest.name} uses "
                    f"{manifest.object.get('apiVersion')}; Kubernetes 1.22+ serves only "
                    f"{CRD_API_VERSION}, rebuild the bundle with v1 CRDs",
                )
            crds.append(manifest)
        else:
            others.append(manifest)
    if csv is None:
        raise InvalidBundleError(
            f"{manifests_dir}/",
            "",
            "no ClusterServiceVersion found; a registry+v1 bundle needs one",
        )
    crd_names = {crd.name for crd in crds}
    for index, owned in enumerate(csv.owned_crds):
        if owned not in crd_names:
            raise InvalidBundleError(
                csv.where,
                f"spec.customresourcedefinitions.owned[{index}].name",
                f"the CSV owns CRD {owned!r} but {manifests_dir}/ does not contain it",
            )
    return RegistryBundle(
        package=package,
        channels=channels,
        default_channel=annotations.get(DEFAULT_CHANNEL_ANNOTATION, ""),
        annotations=annotations,
        dependencies=_typed_entries(root, DEPENDENCIES_FILE, "dependencies", limits),
        properties=_typed_entries(root, PROPERTIES_FILE, "properties", limits),
        csv=csv,
        crds=crds,
        others=others,
        files=files,
        warnings=warnings,
    )


def _annotations(root: Path, limits: ManifestLimits) -> dict[str, str]:
    def fail(path: str, problem: str) -> NoReturn:
        raise InvalidBundleError(ANNOTATIONS_FILE, path, problem)

    path = root / ANNOTATIONS_FILE
    if not os.path.lexists(path):
        raise InvalidBundleError(
            ANNOTATIONS_FILE,
            "",
            "missing; a registry+v1 bundle declares its media type, package "
            "and channels there (is this a plain+v0 bundle?)",
        )
    documents = load_documents(root, path, limits)
    if len(documents) != 1:
        fail("", f"must hold exactly one YAML document, found {len(documents)}")
    document = fields.mapping(documents[0], "", fail, required=True)
    annotations: dict[str, str] = {}
    for key, value in fields.mapping(
        document.get("annotations"), "annotations", fail, required=True
    ).items():
        # YAML turns `true` or `4.10` into non-strings; annotations are strings.
        annotations[str(key)] = (
            value
            if isinstance(value, str)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
    media_type = annotations.get(MEDIA_TYPE_ANNOTATION)
    if media_type != MEDIA_TYPE:
        fail(
            f"annotations.{MEDIA_TYPE_ANNOTATION}",
            f"must be {MEDIA_TYPE!r}, got {media_type!r}; use the provisioner for that format",
        )
    for key in (PACKAGE_ANNOTATION, CHANNELS_ANNOTATION):
        if not annotations.get(key):
            fail(f"annotations.{key}", "is required")
    return annotations


def _manifests_dir(annotations: dict[str, str]) -> str:
    value = annotations.get(MANIFESTS_ANNOTATION, "manifests/").strip().rstrip("/")
    if not value or value.startswith("/") or "/" in value or value in (".", ".."):
        raise InvalidBundleError(
            ANNOTATIONS_FILE,
            f"annotations.{MANIFESTS_ANNOTATION}",
            f"must name one directory at the bundle root (e.g. manifests/), got {value!r}",
        )
    return value


def _manifests(
    root: Path, directory: str, limits: ManifestLimits, files: list[str], warnings: list[str]
) -> list[Manifest]:
    path = root / directory
    if path.is_symlink() or not path.is_dir():
        raise MissingManifestsError(f"the bundle has no {directory}/ directory")
    result: list[Manifest] = []
    for entry, is_dir in directory_entries(root, directory):
        if is_dir:
            raise NestedManifestsError(
                f"subdirectories are not allowed in {directory}/ of a registry+v1 bundle: "
                f"found {directory}/{entry.name}/"
            )
        # Links, FIFOs, devices: the guarded reader refuses what is not a file in the bundle.
        files.append(f"{directory}/{entry.name}")
        for index, document in enumerate(load_documents(root, entry, limits), start=1):
            source = f"{directory}/{entry.name}#{index}"
            obj = _check_object(as_json(document), source, warnings)
            result.append(Manifest(source=source, object=obj))
    return result


def as_json(value: Any) -> Any:
    """``value`` with what YAML adds beyond JSON undone: timestamps and non-string keys become
    strings, as Kubernetes' own YAML reader (sigs.k8s.io/yaml) would leave them."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, date):
        return value.isoformat()
    return value


def _check_object(document: Any, source: str, warnings: list[str]) -> dict[str, Any]:
    def fail(path: str, problem: str) -> NoReturn:
        raise InvalidBundleError(source, path, problem)

    obj = fields.mapping(document, "", fail, required=True)
    kind = fields.string(obj.get("kind"), "kind", fail)
    if obj.get("apiVersion") is None and kind in IMPLIED_API_VERSIONS:
        obj["apiVersion"] = IMPLIED_API_VERSIONS[kind]
        warnings.append(f"{source}: {kind} has no apiVersion; assumed {obj['apiVersion']}")
    fields.string(obj.get("apiVersion"), "apiVersion", fail)
    metadata = fields.mapping(obj.get("metadata"), "metadata", fail, required=True)
    fields.string(metadata.get("name"), "metadata.name", fail)
    return obj


def _typed_entries(root: Path, name: str, key: str, limits: ManifestLimits) -> list[dict[str, Any]]:
    """The ``{type, value}`` entries of dependencies.yaml or properties.yaml (optional files)."""

    def fail(path: str, problem: str) -> NoReturn:
        raise InvalidBundleError(name, path, problem)

    path = root / name
    if not os.path.lexists(path):
        return []
    documents = load_documents(root, path, limits)
    if not documents:
        return []
    if len(documents) != 1:
        fail("", f"must hold exactly one YAML document, found {len(documents)}")
    document = fields.mapping(documents[0], "", fail, required=True)
    entries = fields.sequence(document.get(key), key, fail)
    for index, entry in enumerate(entries):
        item = fields.mapping(entry, f"{key}[{index}]", fail)
        kind = fields.string(item.get("type"), f"{key}[{index}].type", fail)
        if key == "dependencies" and kind not in _DEPENDENCY_TYPES:
            fail(
                f"{key}[{index}].type",
                f"unknown dependency type {kind!r}; known: {', '.join(_DEPENDENCY_TYPES)}",
            )
        if "value" not in item:
            fail(f"{key}[{index}].value", "is required")
    return entries
