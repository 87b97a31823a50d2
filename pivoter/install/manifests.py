"""pivoter's own manifests, rendered for one version and image: what ``pivoter install`` applies.

Two sources, one of each kind of truth: the CRDs are generated from the API definitions
(:mod:`pivoter.apis.generate`, as ``crds/`` is), and the daemon's objects are ``deploy/`` (read
from the repository beside the package when there is one, else from the copy the wheel carries as
package data, ``pivoter/install/deploy/``), in the order its ``kustomization.yaml`` lists them.
Rendering sets the image of every container of ``deploy/`` and labels every object (and every pod
template) with the version, so ``kubectl get -l app.kubernetes.io/version=...`` and ``pivoter
check`` can tell which pivoter runs.

OLM v1's CRDs (``crds/olmv1/``) are included only when asked: next to a running OLM v1 they must
never replace operator-controller's CRDs (docs/olm-v1.md).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pivoter.apis.generate import CRDS
from resolver.safedata import SafeDataError, load_yaml_all

__all__ = [
    "DEFAULT_REPOSITORY",
    "LABEL_NAME",
    "LABEL_VERSION",
    "REGISTRIES_CONFIG_MAP",
    "Manifests",
    "ManifestsError",
    "default_image",
    "deploy_directory",
    "image_tag",
    "render",
]

DEFAULT_REPOSITORY = "ghcr.io/pivoter/pivoter"
"""Where released images are pushed (docs/releasing.md)."""
LABEL_NAME = "app.kubernetes.io/name"
LABEL_VERSION = "app.kubernetes.io/version"
# The image deploy/ names; rendering replaces every container image that starts with it.
_DEPLOY_IMAGE = re.compile(r"^ghcr\.io/pivoter/pivoter(?::[^@]*)?(?:@.*)?$")
# A Kubernetes label value: 63 characters of [A-Za-z0-9._-], alphanumeric at both ends.
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")


class ManifestsError(Exception):
    """The manifests cannot be found or read; the message names the file."""


@dataclass(frozen=True)
class Manifests:
    """What one install applies: the CRDs first (they must be Established before anything that
    uses them), then the daemon's objects in ``deploy/``'s order."""

    version: str
    image: str
    crds: tuple[dict[str, Any], ...]
    components: tuple[dict[str, Any], ...]

    def all(self) -> tuple[dict[str, Any], ...]:
        """Every object, in the order they are applied."""
        return self.crds + self.components


def image_tag(version: str) -> str:
    """The image tag of ``version``: an image tag may not carry ``+`` (a PEP 440 local version,
    as setuptools-scm writes between tags), so it becomes ``-``."""
    return version.replace("+", "-")


def default_image(version: str) -> str:
    """The released image of ``version``."""
    return f"{DEFAULT_REPOSITORY}:{image_tag(version)}"


def deploy_directory() -> Path:
    """``deploy/`` of the repository this package runs from, else the wheel's copy."""
    here = Path(__file__).resolve()
    source = here.parents[2] / "deploy"
    if (source / "kustomization.yaml").is_file() and (here.parents[2] / "pyproject.toml").is_file():
        return source
    packaged = Path(str(resources.files("pivoter.install") / "deploy"))
    if not (packaged / "kustomization.yaml").is_file():
        raise ManifestsError(
            f"pivoter's deploy manifests are missing: neither {source} nor {packaged} has a "
            "kustomization.yaml (a broken installation: reinstall the wheel)"
        )
    return packaged


def _file_objects(path: Path) -> Iterator[dict[str, Any]]:
    try:
        loaded = load_yaml_all(path.read_text(), where=str(path))
    except (OSError, SafeDataError) as exc:
        raise ManifestsError(f"cannot read {path}: {exc}") from exc
    for document in loaded:
        if document is None:
            continue
        if not isinstance(document, dict) or not document.get("kind"):
            raise ManifestsError(f"{path}: every document must be a Kubernetes object")
        yield document


def _deploy_objects(directory: Path) -> list[dict[str, Any]]:
    kustomization = next(iter(_file_objects(directory / "kustomization.yaml")), {})
    listed = kustomization.get("resources")
    if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
        raise ManifestsError(f"{directory / 'kustomization.yaml'}: resources must list files")
    objects: list[dict[str, Any]] = []
    for name in listed:
        objects.extend(_file_objects(directory / name))
    return objects


def _label(metadata: dict[str, Any], version_label: str) -> None:
    labels = metadata.setdefault("labels", {})
    labels[LABEL_VERSION] = version_label


def _pod_specs(obj: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """The (template metadata, pod spec) pairs of a workload."""
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        yield template.setdefault("metadata", {}), template.setdefault("spec", {})


REGISTRIES_CONFIG_MAP = "pivoter-registries"
REGISTRIES_MOUNT = "/etc/pivoter/registries"


def _with_registries_conf(components: list[dict[str, Any]], text: str) -> None:
    """Add a ConfigMap holding ``text`` (a registries.conf) and mount it into the daemon, which
    reads it again when it changes (docs/registries.md)."""
    deployment = next(o for o in components if o.get("kind") == "Deployment")
    namespace = deployment["metadata"]["namespace"]
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": REGISTRIES_CONFIG_MAP,
            "namespace": namespace,
            "labels": {LABEL_NAME: "pivoter"},
        },
        "data": {"registries.conf": text},
    }
    components.insert(components.index(deployment), config_map)
    pod = deployment["spec"]["template"]["spec"]
    pod.setdefault("volumes", []).append(
        {"name": "registries", "configMap": {"name": REGISTRIES_CONFIG_MAP}}
    )
    container = pod["containers"][0]
    container.setdefault("volumeMounts", []).append(
        {"name": "registries", "mountPath": REGISTRIES_MOUNT, "readOnly": True}
    )
    container.setdefault("args", []).append(f"--registries-conf={REGISTRIES_MOUNT}/registries.conf")


def render(
    version: str,
    image: str | None = None,
    *,
    olmv1_apis: bool = False,
    registries_conf: str | None = None,
) -> Manifests:
    """pivoter's manifests at ``version``, running ``image`` (default: the released image of
    ``version``); ``olmv1_apis``: also OLM v1's CRDs, for a cluster where pivoter serves them;
    ``registries_conf``: a registries.conf (mirrors, insecure and blocked registries) for every
    pull the daemon makes, in a ConfigMap it reads."""
    image = image or default_image(version)
    version_label = image_tag(version)
    if not _LABEL_VALUE.match(version_label) or len(version_label) > 63:
        # A long development version (a dirty tree's date suffix) is cut, never refused.
        version_label = re.sub(r"[^A-Za-z0-9._-]", "-", version_label)[:63].strip("._-")
    crds: list[dict[str, Any]] = []
    for filename, factory in CRDS.items():
        if filename.startswith("olmv1/") and not olmv1_apis:
            continue
        crd = copy.deepcopy(dict(factory()))
        _label(crd.setdefault("metadata", {}), version_label)
        crd["metadata"]["labels"].setdefault(LABEL_NAME, "pivoter")
        crds.append(crd)
    components = _deploy_objects(deploy_directory())
    if registries_conf is not None:
        _with_registries_conf(components, registries_conf)
    for obj in components:
        _label(obj.setdefault("metadata", {}), version_label)
        for template_metadata, pod_spec in _pod_specs(obj):
            _label(template_metadata, version_label)
            for container in pod_spec.get("containers") or []:
                if _DEPLOY_IMAGE.match(str(container.get("image", ""))):
                    container["image"] = image
    return Manifests(version=version, image=image, crds=tuple(crds), components=tuple(components))
