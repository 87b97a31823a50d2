"""Unpack failures and bad input through ``pivoter run``.

A bundle without ``manifests/``, with an empty or nested one, or a bad image reference gives
``HasValidBundle=False/UnpackFailed`` with a message a person can act on. Hostile or broken
sources (a layer with ``../`` paths or an absolute symlink, a registry answering 500, a git
repository that does not exist) arriving as a pivot of an installed BundleDeployment: the
condition says why, the previous content keeps running, nothing is written outside the bundle.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.cluster import unique_name
from tests.e2e.conftest import Tarballs
from tests.e2e.helpers import E2E, condition, is_, plain_layer
from tests.manifests import cm_manifest
from tests.provisioners.oci import Entry, Pusher, file
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n"


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ([file("other/cm.yaml", CM)], "has no manifests/ directory"),
        ([Entry("manifests/", kind=tarfile.DIRTYPE)], "zero objects"),
        ([file("manifests/empty.yaml", "# nothing here\n")], "zero objects"),
        ([file("manifests/nested/cm.yaml", CM)], "subdirectories are not allowed"),
    ],
    ids=["missing", "empty-dir", "no-objects", "nested"],
)
def test_bad_bundle_layout(
    e2e: E2E, registry: Registry, pusher: Pusher, entries: list[Entry], fragment: str
) -> None:
    repo = unique_name("layout")
    pusher.image(repo, "v1", [entries])
    name = e2e.deploy({"type": "image", "image": {"ref": f"{registry.host}/{repo}:v1"}})
    bd = e2e.wait_unpack_failed(name)
    message = condition(bd, "HasValidBundle")["message"]
    assert fragment in message, message
    assert is_(bd, "Installed", "Unknown")


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        ("{registry}/does-not-exist:v1", "not found"),
        ("{registry}/UPPER/case:v1", "reference"),
        ("{registry}/x@sha256:1234", "digest"),
    ],
    ids=["missing-image", "invalid-reference", "bad-digest"],
)
def test_bad_image_reference(e2e: E2E, registry: Registry, ref: str, fragment: str) -> None:
    name = e2e.deploy({"type": "image", "image": {"ref": ref.format(registry=registry.host)}})
    bd = e2e.wait_unpack_failed(name)
    message = condition(bd, "HasValidBundle")["message"]
    assert fragment in message.lower(), message


def _traversal(marker: Path) -> list[Entry]:
    relative = "../" * 12 + str(marker).lstrip("/")
    return plain_layer({"cm.yaml": CM}, [file(relative, "escaped")])


def _absolute_link(marker: Path) -> list[Entry]:
    marker.mkdir()  # the link target exists: writing through it would succeed if followed
    link = Entry("manifests/escape", kind=tarfile.SYMTYPE, link=str(marker))
    return plain_layer({"cm.yaml": CM}, [link, file("manifests/escape/pwned.yaml", CM)])


def _bad_source(request: pytest.FixtureRequest, build: str, marker: Path) -> dict[str, object]:
    """The source of a hostile or broken bundle, from the servers the fixtures run."""
    if build in ("traversal", "absolute-link"):
        registry: Registry = request.getfixturevalue("registry")
        pusher: Pusher = request.getfixturevalue("pusher")
        repo = unique_name("evil")
        layer = _traversal(marker) if build == "traversal" else _absolute_link(marker)
        pusher.image(repo, "v1", [layer])
        return {"type": "image", "image": {"ref": f"{registry.host}/{repo}:v1"}}
    if build == "registry-500":
        tarballs: Tarballs = request.getfixturevalue("tarballs")
        return {"type": "image", "image": {"ref": f"{tarballs.host}/broken/bundle:v1"}}
    git_http: str = request.getfixturevalue("git_http")
    return {
        "type": "git",
        "git": {"repository": f"{git_http}/does-not-exist.git", "ref": {"branch": "main"}},
    }


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        ("traversal", ".."),
        ("absolute-link", "link"),
        ("registry-500", "500"),
        ("missing-git-repo", "not found"),
    ],
)
def test_bad_input_keeps_old_content(
    e2e: E2E, request: pytest.FixtureRequest, tmp_path: Path, build: str, fragment: str
) -> None:
    good = e2e.config_map({"cm.yaml": cm_manifest("still-running", e2e.namespace)})
    name = e2e.deploy(
        {"type": "configMaps", "configMaps": [{"configMap": {"name": good}, "path": "manifests"}]}
    )
    active = e2e.wait_installed(name)["status"]["activeBundle"]

    marker = tmp_path / unique_name("escaped")
    source = _bad_source(request, build, marker)
    e2e.retarget(name, source)
    bd = e2e.wait_unpack_failed(name)
    message = condition(bd, "HasValidBundle")["message"]
    assert fragment in message.lower(), message
    assert bd["status"]["activeBundle"] == active
    assert is_(bd, "Installed", "True", "InstallationSucceeded")
    assert e2e.config_map_in("still-running") is not None
    assert not marker.exists() or list(marker.iterdir()) == [], "wrote outside the bundle root"
    store_parent = e2e.daemon.store_dir.parent
    assert sorted(p.name for p in store_parent.iterdir()) == ["pivoter.log", "store"]
