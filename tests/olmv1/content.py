"""Catalog and bundle images for the OLM v1 tests, built the way operator-controller's e2e suite
builds its own (``test/internal/catalog``): registry+v1 bundles generated per scenario (a CSV with
a Deployment, a CRD, a ConfigMap; install modes; extra properties) pushed as images to the local
registry, and an FBC catalog image naming them (``/configs``, with the configs label).

Bundle names are ``<package>.<version>`` (upstream's ``${PACKAGE}.1.2.0``); every scenario uses
its own CRD group, so scenarios never share an API.
"""

from __future__ import annotations

import json
import tarfile
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import yaml

from pivoter.catalogs import CONFIGS_LABEL
from tests.provisioners.oci import (
    LAYER_GZIP,
    OCI_CONFIG,
    OCI_MANIFEST,
    Entry,
    Pusher,
    compress,
    file,
    tar_bytes,
)
from tests.provisioners.servers import Registry

__all__ = ["Bundle", "Package", "bundle_files", "push_bundle", "push_catalog", "tag_image"]

ALL = ("AllNamespaces", "SingleNamespace")


@dataclass(frozen=True)
class Bundle:
    """One bundle version of a package (upstream's catalog table: one row)."""

    version: str
    channels: tuple[str, ...] = ("beta",)
    replaces: str = ""
    skips: tuple[str, ...] = ()
    contents: tuple[str, ...] = ("CRD", "Deployment", "ConfigMap")
    install_modes: tuple[str, ...] = ALL
    properties: tuple[tuple[str, Any], ...] = ()
    """Extra FBC properties: (type, value), e.g. ``olm.gvk.required``."""
    crd_field_type: str = "integer"
    """The type of the CRD's ``spec.size`` (changing it between versions is an unsafe CRD
    upgrade: the upgrade fails after the dry run)."""
    provides: str = ""
    """Kind of the CRD it owns (default: from the package name)."""
    ready: bool = True
    """False: its Deployment's pod selects a node that does not exist, so it never becomes
    available and an install stays rolling out (until the pivot's deadline)."""


@dataclass
class Package:
    """A package of a scenario's catalog."""

    name: str
    bundles: list[Bundle]
    default_channel: str = ""
    deprecations: list[dict[str, Any]] = field(default_factory=list)


def _kind(package: str) -> str:
    return "".join(p.capitalize() for p in package.replace(".", "-").split("-")) + "Test"


def group_of(scenario: str) -> str:
    """The CRD group of a scenario."""
    return f"e2e-{scenario}.e2e.operatorframework.io"


def bundle_files(scenario: str, package: str, bundle: Bundle) -> dict[str, str]:
    """The files of a registry+v1 bundle image."""
    kind = bundle.provides or _kind(package)
    group = group_of(scenario)
    plural = kind.lower() + "s"
    crd_name = f"{plural}.{group}"
    deployment = f"test-operator-{scenario}-{package}"[:60].rstrip("-")
    account = f"bundle-manager-{scenario}-{package}"[:60].rstrip("-")
    owned = []
    files: dict[str, str] = {}
    if "CRD" in bundle.contents:
        owned.append({"name": crd_name, "version": "v1", "kind": kind, "displayName": kind})
        files["manifests/crd.yaml"] = yaml.safe_dump(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": crd_name},
                "spec": {
                    "group": group,
                    "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "properties": {
                                        "spec": {
                                            "type": "object",
                                            "properties": {"size": {"type": bundle.crd_field_type}},
                                        }
                                    },
                                }
                            },
                        }
                    ],
                },
            }
        )
    if "ConfigMap" in bundle.contents:
        files["manifests/configmap.yaml"] = yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"test-configmap-{scenario}-{package}"[:60]},
                "data": {"version": bundle.version},
            }
        )
    deployments = []
    if "Deployment" in bundle.contents:
        labels = {"app": deployment}
        deployments.append(
            {
                "name": deployment,
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "serviceAccountName": account,
                            "containers": [
                                {"name": "manager", "image": "busybox:1.36", "args": ["sleep"]}
                            ],
                            **(
                                {}
                                if bundle.ready
                                else {"nodeSelector": {"test.pivoter.io/no-such-node": "true"}}
                            ),
                        },
                    },
                },
            }
        )
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": f"{package}.v{bundle.version}", "annotations": {}},
        "spec": {
            "displayName": package,
            "version": bundle.version,
            "installModes": [
                {"type": mode, "supported": mode in bundle.install_modes}
                for mode in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
            "customresourcedefinitions": {"owned": owned},
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": deployments,
                    "permissions": [
                        {
                            "serviceAccountName": account,
                            "rules": [
                                {
                                    "apiGroups": [""],
                                    "resources": ["configmaps"],
                                    "verbs": ["get", "list", "watch"],
                                }
                            ],
                        }
                    ]
                    if deployments
                    else [],
                },
            },
        },
    }
    files["manifests/csv.yaml"] = yaml.safe_dump(csv)
    files["metadata/annotations.yaml"] = yaml.safe_dump(
        {
            "annotations": {
                "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
                "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
                "operators.operatorframework.io.bundle.package.v1": package,
                "operators.operatorframework.io.bundle.channels.v1": ",".join(bundle.channels),
            }
        }
    )
    return files


def push_image(
    registry: Registry, repo: str, tag: str, files: dict[str, str], labels: dict[str, str]
) -> str:
    """Push a one-layer image holding ``files``; return its manifest digest."""
    pusher = Pusher(registry.base, None, None, None)
    directories = sorted({p.rsplit("/", 1)[0] + "/" for p in files if "/" in p})
    entries = [Entry(d, kind=tarfile.DIRTYPE) for d in directories]
    entries += [file(path, text) for path, text in sorted(files.items())]
    layer = compress(tar_bytes(entries), LAYER_GZIP)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
    ).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "digest": pusher.blob(repo, config),
            "size": len(config),
        },
        "layers": [
            {"mediaType": LAYER_GZIP, "digest": pusher.blob(repo, layer), "size": len(layer)}
        ],
    }
    return pusher.manifest(repo, tag, json.dumps(manifest).encode(), OCI_MANIFEST)


def push_bundle(registry: Registry, scenario: str, package: str, bundle: Bundle) -> str:
    """Push one bundle image; return its reference."""
    repo = f"bundles/{package}"
    tag = f"v{bundle.version}"
    push_image(registry, repo, tag, bundle_files(scenario, package, bundle), {})
    return f"{registry.host}/{repo}:{tag}"


def fbc(registry: Registry, scenario: str, packages: list[Package]) -> str:
    """The catalog's FBC (YAML documents), pushing every bundle image it names."""
    docs: list[dict[str, Any]] = []
    for package in packages:
        channels: dict[str, list[dict[str, Any]]] = {}
        for b in package.bundles:
            for channel in b.channels:
                entry: dict[str, Any] = {"name": f"{package.name}.{b.version}"}
                if b.replaces:
                    entry["replaces"] = f"{package.name}.{b.replaces}"
                if b.skips:
                    entry["skips"] = [f"{package.name}.{s}" for s in b.skips]
                channels.setdefault(channel, []).append(entry)
        default = package.default_channel or next(iter(channels))
        docs.append({"schema": "olm.package", "name": package.name, "defaultChannel": default})
        for channel, entries in channels.items():
            docs.append(
                {
                    "schema": "olm.channel",
                    "name": channel,
                    "package": package.name,
                    "entries": entries,
                }
            )
        for b in package.bundles:
            image = push_bundle(registry, scenario, package.name, b)
            properties: list[dict[str, Any]] = [
                {
                    "type": "olm.package",
                    "value": {"packageName": package.name, "version": b.version},
                }
            ]
            if "CRD" in b.contents:
                properties.append(
                    {
                        "type": "olm.gvk",
                        "value": {
                            "group": group_of(scenario),
                            "version": "v1",
                            "kind": b.provides or _kind(package.name),
                        },
                    }
                )
            properties += [{"type": t, "value": v} for t, v in b.properties]
            docs.append(
                {
                    "schema": "olm.bundle",
                    "name": f"{package.name}.{b.version}",
                    "package": package.name,
                    "image": image,
                    "properties": properties,
                }
            )
        if package.deprecations:
            docs.append(
                {
                    "schema": "olm.deprecations",
                    "package": package.name,
                    "entries": package.deprecations,
                }
            )
    return yaml.safe_dump_all(docs, sort_keys=False)


def push_catalog(
    registry: Registry, scenario: str, name: str, tag: str, packages: list[Package]
) -> str:
    """Push the catalog image ``e2e/<name>-catalog-<scenario>:<tag>``; return its reference."""
    repo = f"e2e/{name}-catalog-{scenario}"
    files = {"configs/catalog.yaml": fbc(registry, scenario, packages)}
    push_image(registry, repo, tag, files, {CONFIGS_LABEL: "/configs"})
    return f"{registry.host}/{repo}:{tag}"


def tag_image(registry: Registry, repo_ref: str, tag: str) -> None:
    """Tag the image ``repo_ref`` (``host/repo:tag``) also as ``tag`` (upstream's "also tagged")."""
    host_repo, _, old = repo_ref.rpartition(":")
    repo = host_repo.partition("/")[2]
    request = urllib.request.Request(
        f"{registry.base}/v2/{repo}/manifests/{old}", headers={"Accept": OCI_MANIFEST}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    Pusher(registry.base, None, None, None).manifest(repo, tag, body, OCI_MANIFEST)


# -- Images pushed with credentials, and catalogs that name their bundles where the test says
# (tests/olmv1/test_registries_cluster.py: a private registry; a mirror that holds what the
# catalog names at a source registry nobody can reach).


def push_image_with(
    pusher: Pusher, repo: str, tag: str, files: dict[str, str], labels: dict[str, str]
) -> str:
    """:func:`push_image` through ``pusher`` (one that logs in, for a registry that requires
    credentials to push); return the manifest digest."""
    directories = sorted({p.rsplit("/", 1)[0] + "/" for p in files if "/" in p})
    entries = [Entry(d, kind=tarfile.DIRTYPE) for d in directories]
    entries += [file(path, text) for path, text in sorted(files.items())]
    layer = compress(tar_bytes(entries), LAYER_GZIP)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
    ).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "digest": pusher.blob(repo, config),
            "size": len(config),
        },
        "layers": [
            {"mediaType": LAYER_GZIP, "digest": pusher.blob(repo, layer), "size": len(layer)}
        ],
    }
    return pusher.manifest(repo, tag, json.dumps(manifest).encode(), OCI_MANIFEST)


def fbc_naming(scenario: str, packages: list[Package], images: dict[str, str]) -> str:
    """The catalog's FBC as :func:`fbc` writes it, but naming each bundle's image as ``images``
    says (bundle name ``<package>.<version>`` -> reference) and pushing nothing: the caller has
    pushed the bundles where it wants them (with credentials, or to a mirror while the catalog
    names them by digest at the source, as a mirrored catalog does)."""
    docs: list[dict[str, Any]] = []
    for package in packages:
        channels: dict[str, list[dict[str, Any]]] = {}
        for b in package.bundles:
            for channel in b.channels:
                entry: dict[str, Any] = {"name": f"{package.name}.{b.version}"}
                if b.replaces:
                    entry["replaces"] = f"{package.name}.{b.replaces}"
                if b.skips:
                    entry["skips"] = [f"{package.name}.{s}" for s in b.skips]
                channels.setdefault(channel, []).append(entry)
        default = package.default_channel or next(iter(channels))
        docs.append({"schema": "olm.package", "name": package.name, "defaultChannel": default})
        for channel, entries in channels.items():
            docs.append(
                {
                    "schema": "olm.channel",
                    "name": channel,
                    "package": package.name,
                    "entries": entries,
                }
            )
        for b in package.bundles:
            properties: list[dict[str, Any]] = [
                {
                    "type": "olm.package",
                    "value": {"packageName": package.name, "version": b.version},
                }
            ]
            if "CRD" in b.contents:
                kind = b.provides or _kind(package.name)
                properties.append(
                    {
                        "type": "olm.gvk",
                        "value": {"group": group_of(scenario), "version": "v1", "kind": kind},
                    }
                )
            properties += [{"type": t, "value": v} for t, v in b.properties]
            name = f"{package.name}.{b.version}"
            docs.append(
                {
                    "schema": "olm.bundle",
                    "name": name,
                    "package": package.name,
                    "image": images[name],
                    "properties": properties,
                }
            )
    return yaml.safe_dump_all(docs, sort_keys=False)
