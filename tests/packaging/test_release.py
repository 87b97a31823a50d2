"""``hack/release.sh --snapshot`` makes every artifact of a release, each checked here: the wheel
and sdist, the image pushed to a registry (its digest recorded), install.yaml naming that digest,
the SBOMs of the Python environment (cyclonedx-py) and of the image (syft), and SHA256SUMS.

It runs in a clean clone (:mod:`tests.packaging.clones`) and builds a development version when
HEAD has no tag (test_wheel.py builds a tagged one). The image is built like tests/image's (same
podman storage and layer cache: a warm build takes under a minute) and pushed to a plain-http
registry on loopback. Sizes are printed (docs/releasing.md has them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.image.images import canonical, locked
from tests.packaging.clones import git, snapshot_clone
from tests.provisioners.servers import Registry, run_registry

pytestmark = [pytest.mark.slow, pytest.mark.tools, pytest.mark.timeout(2400)]

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json"
)


@dataclass(frozen=True)
class Made:
    """A snapshot release and what it was made from."""

    dist: Path
    version: str
    commit: str
    source: Path
    registry: Registry

    def file(self, pattern: str) -> Path:
        (found,) = self.dist.glob(pattern)
        return found


@pytest.fixture(scope="module")
def release_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with run_registry(tmp_path_factory.mktemp("release-registry")) as running:
        yield running


@pytest.fixture(scope="module")
def made(release_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Made:
    top = tmp_path_factory.mktemp("release")
    source = snapshot_clone(top / "src")
    dist = top / "dist"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    with (top / "release.log").open("w") as log:
        result = subprocess.run(
            [str(source / "hack/release.sh"), "--snapshot", "--registry", release_registry.host,
             "--out", str(dist)],
            cwd=source, env=env, stdout=subprocess.PIPE, stderr=log, text=True, timeout=2200,
            check=False,
        )  # fmt: skip
    assert result.returncode == 0, (top / "release.log").read_text()[-6000:]
    for path in sorted(dist.iterdir()):
        print(f"\n{path.name}: {path.stat().st_size / 1e3:.0f} kB", end="")
    return Made(
        dist,
        result.stdout.strip().splitlines()[-1],
        git("rev-parse", "HEAD", cwd=source).strip(),
        source,
        release_registry,
    )


def _get(url: str, accept: str | None = None) -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), dict(response.headers)


def _components(sbom: dict[str, Any]) -> dict[str, set[str]]:
    """``{canonical name: {versions}}`` of an SBOM's components."""
    found: dict[str, set[str]] = {}
    for component in sbom.get("components", []):
        found.setdefault(canonical(component["name"]), set()).add(component.get("version", ""))
    return found


def test_every_artifact_is_there_and_summed(made: Made) -> None:
    v = made.version
    names = sorted(p.name for p in made.dist.iterdir())
    assert names == sorted(
        [
            "SHA256SUMS",
            "image.txt",
            "install.yaml",
            f"pivoter-{v}-py3-none-any.whl",
            f"pivoter-{v}.tar.gz",
            f"pivoter-{v}.python.cdx.json",
            f"pivoter-{v}.image.cdx.json",
        ]
    )
    sums = {}
    for line in (made.dist / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        sums[name] = digest
    assert set(sums) == set(names) - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256((made.dist / name).read_bytes()).hexdigest() == digest, name
    # ... and as a user checks them.
    check = subprocess.run(
        ["sha256sum", "--check", "SHA256SUMS"], cwd=made.dist, capture_output=True, check=False
    )
    assert check.returncode == 0, check.stdout


def test_a_snapshot_is_the_development_version_of_the_commit(made: Made) -> None:
    if not git("tag", "--points-at", "HEAD", "--list", "v*", cwd=made.source).split():
        # X.Y.(Z+1).devN after a tag; 0.1.devN in a clone without tags (CI's checkout of main).
        development = rf"\d+\.\d+(\.\d+)?\.dev\d+\+g{made.commit[:7]}[0-9a-f]*"
        assert re.fullmatch(development, made.version)


def test_install_yaml_names_the_pushed_image_by_digest(made: Made) -> None:
    reference = (made.dist / "image.txt").read_text().strip()
    repository, _, digest = reference.partition("@")
    assert repository == f"{made.registry.host}/pivoter"
    tag = made.version.replace("+", "-")
    manifest, headers = _get(
        f"{made.registry.base}/v2/pivoter/manifests/{tag}", accept=MANIFEST_TYPES
    )
    assert headers["Docker-Content-Digest"] == digest
    assert "sha256:" + hashlib.sha256(manifest).hexdigest() == digest
    layers = json.loads(manifest)["layers"]
    compressed = sum(int(layer["size"]) for layer in layers)
    print(f"\nimage: {compressed / 1e6:.0f} MB compressed, {len(layers)} layers")

    objects = [o for o in yaml.safe_load_all((made.dist / "install.yaml").read_text()) if o]
    kinds = {o["kind"] for o in objects}
    assert {"CustomResourceDefinition", "Namespace", "Deployment"} <= kinds
    images = {
        c["image"]
        for o in objects
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert images == {reference}

    # The image says which pivoter it is, in its labels and in `pivoter version`.
    config_digest = json.loads(manifest)["config"]["digest"]
    config, _ = _get(f"{made.registry.base}/v2/pivoter/blobs/{config_digest}")
    labels = json.loads(config)["config"]["Labels"]
    epoch = int(git("show", "-s", "--format=%ct", "HEAD", cwd=made.source))
    assert labels["org.opencontainers.image.version"] == made.version
    assert labels["org.opencontainers.image.revision"] == made.commit
    assert labels["org.opencontainers.image.created"] == datetime.fromtimestamp(
        epoch, UTC
    ).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_python_sbom_lists_pivoter_and_every_locked_package(made: Made) -> None:
    sbom = json.loads(made.file("*.python.cdx.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX"
    components = _components(sbom)
    assert components.pop("pivoter") == {made.version}
    expected = {
        name: {version} for name, version in locked(made.source / "requirements.lock").items()
    }
    assert components == expected  # nothing else: no pip, no setuptools


def test_the_image_sbom_lists_its_python_packages_and_more(made: Made) -> None:
    sbom = json.loads(made.file("*.image.cdx.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX"
    assert sbom["metadata"]["component"]["version"] == made.version
    components = _components(sbom)
    assert made.version in components["pivoter"]
    for name, version in locked(made.source / "requirements.lock").items():
        assert version in components.get(name, set()), f"{name}=={version} not in the image SBOM"
    assert "git" in components  # a Debian package of the base
    assert "helm-sh/helm/v3" in components  # the Go binary, by its module
