"""Catalog and bundle content for the Resolution tests: plain+v0 bundle images pushed to a real
registry, and FBC catalogs naming them, written into the directory a catalog server serves."""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class Version:
    """One bundle of a package: its version, what it installs and what it needs."""

    version: str
    manifests: str
    replaces: str = ""
    requires: tuple[tuple[str, str], ...] = ()
    """(package, blang range) pairs: ``olm.package.required``."""
    mediatype: str = "plain+v0"
    files: tuple[tuple[str, str], ...] = ()
    """The image's files (path, text) instead of ``manifests/objects.yaml`` (e.g. a chart)."""


@dataclass
class Publisher:
    """Pushes bundle images and writes the FBC the catalog server serves."""

    pusher: Pusher
    registry_host: str
    directory: Path
    packages: dict[str, list[Version]] = field(default_factory=dict)
    digests: dict[tuple[str, str], str] = field(default_factory=dict)
    """(package, version) -> the manifest digest of its pushed image."""

    def image(self, package: str, version: str) -> str:
        """The image reference of a bundle."""
        return f"{self.registry_host}/{package}:{version}"

    def add(self, package: str, version: Version) -> None:
        """Push the bundle image and add it to the package (not yet published)."""
        entries: list[Entry] = [
            Entry("manifests/", kind=tarfile.DIRTYPE),
            file("manifests/objects.yaml", version.manifests),
        ]
        if version.files:
            directories = sorted(
                {path.rsplit("/", 1)[0] + "/" for path, _ in version.files if "/" in path}
            )
            entries = [Entry(d, kind=tarfile.DIRTYPE) for d in directories]
            entries += [file(path, text) for path, text in version.files]
        digest = self.pusher.image(package, version.version, [entries])
        self.digests[(package, version.version)] = digest
        self.packages.setdefault(package, []).append(version)

    def push_catalog(self, repo: str, tag: str) -> tuple[str, str]:
        """Push the published FBC files as a catalog image (``/configs``, labelled as opm
        labels it); its reference and manifest digest."""
        entries = [Entry("configs/", kind=tarfile.DIRTYPE)] + [
            file(f"configs/{path.name}", path.read_text())
            for path in sorted(self.directory.glob("*.yaml"))
        ]
        layer = compress(tar_bytes(entries), LAYER_GZIP)
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {"Labels": {CONFIGS_LABEL: "/configs"}},
                "rootfs": {"type": "layers", "diff_ids": []},
            }
        ).encode()
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": OCI_CONFIG,
                "digest": self.pusher.blob(repo, config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": LAYER_GZIP,
                    "digest": self.pusher.blob(repo, layer),
                    "size": len(layer),
                }
            ],
        }
        digest = self.pusher.manifest(repo, tag, json.dumps(manifest).encode(), OCI_MANIFEST)
        return f"{self.registry_host}/{repo}:{tag}", digest

    def publish(self) -> None:
        """Write every package as one FBC file (the server reloads the directory)."""
        for package, versions in self.packages.items():
            docs: list[dict[str, object]] = [
                {"schema": "olm.package", "name": package, "defaultChannel": "stable"},
                {
                    "schema": "olm.channel",
                    "name": "stable",
                    "package": package,
                    "entries": [
                        {"name": f"{package}.v{v.version}"}
                        | ({"replaces": f"{package}.v{v.replaces}"} if v.replaces else {})
                        for v in versions
                    ],
                },
            ]
            for v in versions:
                properties: list[dict[str, object]] = [
                    {
                        "type": "olm.package",
                        "value": {"packageName": package, "version": v.version},
                    },
                    {"type": "olm.bundle.mediatype", "value": v.mediatype},
                ]
                properties += [
                    {"type": "olm.package.required", "value": {"packageName": p, "versionRange": r}}
                    for p, r in v.requires
                ]
                docs.append(
                    {
                        "schema": "olm.bundle",
                        "name": f"{package}.v{v.version}",
                        "package": package,
                        "image": self.image(package, v.version),
                        "properties": properties,
                    }
                )
            path = self.directory / f"{package}.yaml"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(yaml.safe_dump_all(docs, sort_keys=False))
            tmp.rename(path)


def config_map(name: str, namespace: str, **data: str) -> str:
    """A ConfigMap manifest."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
    )


def missing_kind(name: str, namespace: str) -> str:
    """An object of a kind no CRD provides: its install fails with "no matches for kind"."""
    return yaml.safe_dump(
        {
            "apiVersion": "missing.pivoter.io/v1",
            "kind": "Nowhere",
            "metadata": {"name": name, "namespace": namespace},
        }
    )


def unschedulable_deployment(name: str, namespace: str) -> str:
    """A Deployment whose pod no node can take: it passes the server-side dry run and installs,
    but never becomes available, so its bundle stays unhealthy until the progress deadline."""
    labels = {"app": name}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"test.pivoter.io/no-such-node": "true"},
                        "containers": [{"name": "main", "image": "registry.invalid/never:1"}],
                    },
                },
            },
        }
    )
