"""Catalog content for the OLM v0 tests, built from registry+v1 bundle directories.

OLM v0 and pivoter read the same bundles through two FBC directories:

* the one for OLM's CatalogSource (served by ``opm serve``) inlines every manifest as an
  ``olm.bundle.object`` property and names no image: OLM then builds the InstallPlan from the
  catalog's answer, with no unpack Job (a Job's pod would not run on a simulated node);
* the one for pivoter's Catalog names each bundle's image, pushed to the test registry.

Both carry the same package, channel, bundle names and upgrade edges. Dependencies are left out
on purpose: the real bundles depend on operators no test catalog has, and the differential is
about what one bundle installs, not about resolution. Used by tests/olmv0/.
"""

from __future__ import annotations

import base64
import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.provisioners.oci import Entry, Pusher, file

ANNOTATIONS = "operators.operatorframework.io.bundle"


class _TextTimestamps(yaml.SafeLoader):
    """YAML without the timestamp type: ``createdAt: 2020-03-25T08:00:00Z`` stays that text, as
    Kubernetes' own YAML reader (and so OLM v0's) keeps it."""


_TextTimestamps.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class BundleDir:
    """One registry+v1 bundle directory, read."""

    root: Path
    package: str
    channels: tuple[str, ...]
    csv: dict[str, Any]

    @property
    def name(self) -> str:
        """The CSV's name (the bundle's name in the catalog)."""
        return str(self.csv["metadata"]["name"])

    @property
    def version(self) -> str:
        """The CSV's version."""
        return str(self.csv["spec"]["version"])

    @property
    def replaces(self) -> str:
        """The CSV it replaces ("" for none)."""
        return str(self.csv["spec"].get("replaces") or "")

    def manifests(self) -> list[dict[str, Any]]:
        """Every object of ``manifests/``."""
        objects: list[dict[str, Any]] = []
        for path in sorted((self.root / "manifests").iterdir()):
            objects.extend(d for d in yaml.load_all(path.read_text(), _TextTimestamps) if d)
        return objects

    def owned_crds(self) -> list[dict[str, str]]:
        """The group/version/kind of every CRD the CSV owns."""
        owned = (self.csv["spec"].get("customresourcedefinitions") or {}).get("owned") or []
        return [
            {"group": o["name"].split(".", 1)[1], "version": o["version"], "kind": o["kind"]}
            for o in owned
        ]


def read_bundle(root: Path) -> BundleDir:
    """Read the package, channels and CSV of the bundle at ``root``."""
    annotations = yaml.safe_load((root / "metadata" / "annotations.yaml").read_text())
    values = annotations["annotations"]
    csv_path = next(p for p in (root / "manifests").iterdir() if "clusterserviceversion" in p.name)
    return BundleDir(
        root=root,
        package=str(values[f"{ANNOTATIONS}.package.v1"]),
        channels=tuple(c.strip() for c in str(values[f"{ANNOTATIONS}.channels.v1"]).split(",")),
        csv=yaml.safe_load(csv_path.read_text()),
    )


def new_version(
    bundle: BundleDir, version: str, dest: Path, *, env: dict[str, str] | None = None
) -> BundleDir:
    """A copy of ``bundle`` at ``version`` that replaces it (CSV name ``<package>.v<version>``),
    with ``env`` added to every container of its Deployments (so the upgrade rolls them out)."""
    target = dest / f"{bundle.package}-{version}"
    shutil.copytree(bundle.root, target)
    csv_path = next(
        p for p in (target / "manifests").iterdir() if "clusterserviceversion" in p.name
    )
    csv = yaml.safe_load(csv_path.read_text())
    csv["metadata"]["name"] = f"{bundle.package}.v{version}"
    csv["spec"]["version"] = version
    csv["spec"]["replaces"] = bundle.name
    csv["spec"].pop("skips", None)
    (csv["metadata"].get("annotations") or {}).pop("olm.skipRange", None)
    for deployment in csv["spec"]["install"]["spec"]["deployments"]:
        for container in deployment["spec"]["template"]["spec"].get("containers") or []:
            container.setdefault("env", []).extend(
                {"name": k, "value": v} for k, v in (env or {}).items()
            )
    csv_path.write_text(yaml.safe_dump(csv, sort_keys=False))
    return read_bundle(target)


def _encoded(obj: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(obj, sort_keys=True).encode()).decode()


def write_fbc(
    directory: Path,
    bundles: list[BundleDir],
    *,
    images: dict[str, str] | None = None,
) -> None:
    """Write one package per file into ``directory``: every bundle of ``bundles`` in each of its
    channels (in the order given, ``replaces`` edges as the CSVs say). With ``images`` (bundle
    name -> image) the bundles name their image (pivoter's catalog); without, they inline their
    manifests (OLM's catalog)."""
    directory.mkdir(parents=True, exist_ok=True)
    packages: dict[str, list[BundleDir]] = {}
    for b in bundles:
        packages.setdefault(b.package, []).append(b)
    for package, versions in packages.items():
        channels: dict[str, list[dict[str, str]]] = {}
        for b in versions:
            for channel in b.channels:
                entry = {"name": b.name} | ({"replaces": b.replaces} if b.replaces else {})
                channels.setdefault(channel, []).append(entry)
        default = versions[-1].channels[0]
        docs: list[dict[str, Any]] = [
            {"schema": "olm.package", "name": package, "defaultChannel": default}
        ]
        docs += [
            {"schema": "olm.channel", "name": c, "package": package, "entries": entries}
            for c, entries in channels.items()
        ]
        for b in versions:
            properties: list[dict[str, Any]] = [
                {"type": "olm.package", "value": {"packageName": package, "version": b.version}},
                {"type": "olm.bundle.mediatype", "value": "registry+v1"},
            ]
            properties += [{"type": "olm.gvk", "value": gvk} for gvk in b.owned_crds()]
            doc: dict[str, Any] = {"schema": "olm.bundle", "name": b.name, "package": package}
            if images is not None:
                doc["image"] = images[b.name]
            else:
                properties += [
                    {"type": "olm.bundle.object", "value": {"data": _encoded(o)}}
                    for o in b.manifests()
                ]
            doc["properties"] = properties
            docs.append(doc)
        (directory / f"{package}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))


def push_bundle(pusher: Pusher, registry_host: str, bundle: BundleDir) -> str:
    """Push ``bundle`` as an image (its ``manifests/`` and ``metadata/``); return the reference."""
    entries: list[Entry] = []
    for part in ("manifests", "metadata"):
        entries.append(Entry(f"{part}/", kind=tarfile.DIRTYPE))
        entries += [
            file(f"{part}/{p.name}", p.read_text())
            for p in sorted((bundle.root / part).iterdir())
            if p.is_file()
        ]
    tag = bundle.version
    pusher.image(bundle.package, tag, [entries])
    return f"{registry_host}/{bundle.package}:{tag}"
