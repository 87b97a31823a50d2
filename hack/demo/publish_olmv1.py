"""Publish the demo's OLM v1 catalog: registry+v1 bundle images (what OLM v1 installs) and a
catalog image naming them (FBC under ``/configs``, with the configs label), both pushed to the
demo's local registry, for a ``ClusterCatalog`` to unpack. Used by hack/demo.sh; reuses the test
suite's OCI pusher. Prints the catalog image's reference.

    python hack/demo/publish_olmv1.py STEP --registry 127.0.0.1:5000

STEP 1 (tag ``v1``): guestbook 1.0.0, which needs the ``GuestbookStore`` API
(``olm.gvk.required``), and guestbook-store 1.0.0, which provides it.
STEP 2 (tag ``v2``): adds guestbook-store 1.1.0 and guestbook 1.1.0, which needs guestbook-store
1.1.0 (``olm.package.required``) and is broken: it changes its CRD's ``spec.size`` from integer
to string, an unsafe CRD upgrade. The store moves first; guestbook then fails when applied, and
the group goes back together.

OLM v1's own resolver refuses a bundle that declares a dependency; pivoter resolves it when the
ClusterExtension says ``pivoter.io/dependencies: Install``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

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

CONFIGS_LABEL = "operators.operatorframework.io.index.configs.v1"
"""The image label naming the FBC directory (pivoter.catalogs.CONFIGS_LABEL; not imported, which
would load the whole catalog package in every run)."""
GROUP = "guestbook.demo.pivoter.io"
CATALOG_REPO = "demo/olmv1-catalog"


@dataclass(frozen=True)
class Bundle:
    """One registry+v1 bundle of the demo."""

    package: str
    version: str
    kind: str
    """The kind of the CRD it owns."""
    replaces: str = ""
    requires_kind: str = ""
    """An API it needs (``olm.gvk.required``)."""
    requires_package: tuple[str, str] = ("", "")
    """(package, range) it needs (``olm.package.required``)."""
    size_type: str = "integer"
    """The type of its CRD's ``spec.size``: changing it is an unsafe CRD upgrade."""

    @property
    def name(self) -> str:
        return f"{self.package}.v{self.version}"

    @property
    def image_repo(self) -> str:
        return f"demo/bundles/{self.package}"


def _crd(kind: str, size_type: str) -> dict[str, Any]:
    plural = kind.lower() + "s"
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": size_type}}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _csv(bundle: Bundle) -> dict[str, Any]:
    labels = {"app": bundle.package}
    deployment = {
        "name": bundle.package,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": f"registry.example/{bundle.package}:{bundle.version}",
                        }
                    ]
                },
            },
        },
    }
    crd = f"{bundle.kind.lower()}s.{GROUP}"
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": bundle.name},
        "spec": {
            "displayName": bundle.package,
            "version": bundle.version,
            "installModes": [
                {"type": mode, "supported": mode == "AllNamespaces"}
                for mode in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
            "customresourcedefinitions": {
                "owned": [{"name": crd, "version": "v1", "kind": bundle.kind}],
                "required": (
                    [
                        {
                            "name": f"{bundle.requires_kind.lower()}s.{GROUP}",
                            "version": "v1",
                            "kind": bundle.requires_kind,
                        }
                    ]
                    if bundle.requires_kind
                    else []
                ),
            },
            "install": {"strategy": "deployment", "spec": {"deployments": [deployment]}},
        },
    }


def bundle_files(bundle: Bundle) -> dict[str, str]:
    """The files of the bundle's image: manifests/ and metadata/annotations.yaml."""
    return {
        "manifests/crd.yaml": yaml.safe_dump(_crd(bundle.kind, bundle.size_type)),
        "manifests/csv.yaml": yaml.safe_dump(_csv(bundle)),
        "metadata/annotations.yaml": yaml.safe_dump(
            {
                "annotations": {
                    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
                    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
                    "operators.operatorframework.io.bundle.package.v1": bundle.package,
                    "operators.operatorframework.io.bundle.channels.v1": "stable",
                }
            }
        ),
    }


def push_image(
    pusher: Pusher, repo: str, tag: str, files: dict[str, str], labels: dict[str, str]
) -> None:
    """Push a one-layer OCI image holding ``files``."""
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
    pusher.manifest(repo, tag, json.dumps(manifest).encode(), OCI_MANIFEST)


def bundles(step: int) -> list[Bundle]:
    """The demo catalog's bundles at ``step``."""
    store = "guestbook-store"
    found = [
        Bundle(store, "1.0.0", "GuestbookStore"),
        Bundle("guestbook", "1.0.0", "Guestbook", requires_kind="GuestbookStore"),
    ]
    if step >= 2:
        found += [
            Bundle(store, "1.1.0", "GuestbookStore", replaces="1.0.0"),
            Bundle(
                "guestbook",
                "1.1.0",
                "Guestbook",
                replaces="1.0.0",
                requires_kind="GuestbookStore",
                requires_package=(store, ">=1.1.0"),
                size_type="string",
            ),
        ]
    return found


def fbc(registry: str, found: list[Bundle]) -> str:
    """The catalog's FBC: one package per name, one ``stable`` channel, the bundles' images."""
    docs: list[dict[str, Any]] = []
    for package in dict.fromkeys(b.package for b in found):
        mine = [b for b in found if b.package == package]
        docs.append({"schema": "olm.package", "name": package, "defaultChannel": "stable"})
        entries = [
            {"name": b.name} | ({"replaces": f"{package}.v{b.replaces}"} if b.replaces else {})
            for b in mine
        ]
        docs.append(
            {"schema": "olm.channel", "name": "stable", "package": package, "entries": entries}
        )
        for b in mine:
            properties: list[dict[str, Any]] = [
                {"type": "olm.package", "value": {"packageName": package, "version": b.version}},
                {"type": "olm.gvk", "value": {"group": GROUP, "version": "v1", "kind": b.kind}},
            ]
            if b.requires_kind:
                gvk = {"group": GROUP, "version": "v1", "kind": b.requires_kind}
                properties.append({"type": "olm.gvk.required", "value": gvk})
            if b.requires_package[0]:
                name, version_range = b.requires_package
                properties.append(
                    {
                        "type": "olm.package.required",
                        "value": {"packageName": name, "versionRange": version_range},
                    }
                )
            docs.append(
                {
                    "schema": "olm.bundle",
                    "name": b.name,
                    "package": package,
                    "image": f"{registry}/{b.image_repo}:v{b.version}",
                    "properties": properties,
                }
            )
    return yaml.safe_dump_all(docs, sort_keys=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", type=int, choices=(1, 2))
    parser.add_argument("--registry", required=True, help="host:port of a plain-http registry")
    args = parser.parse_args()
    pusher = Pusher(f"http://{args.registry}")
    found = bundles(args.step)
    for b in found:
        push_image(pusher, b.image_repo, f"v{b.version}", bundle_files(b), {})
    tag = f"v{args.step}"
    files = {"configs/catalog.yaml": fbc(args.registry, found)}
    push_image(pusher, CATALOG_REPO, tag, files, {CONFIGS_LABEL: "/configs"})
    print(f"{args.registry}/{CATALOG_REPO}:{tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
