"""Each source kind through a BundleDeployment on ``pivoter run``: image (public and private with a
pullSecret), git (branch, tag, commit, directory, https basic auth), http tar.gz and ConfigMaps.

Only the API is used: a BundleDeployment is created, the daemon unpacks and installs, the test
reads conditions, ``resolvedSource`` and the installed objects.
"""

from __future__ import annotations

import json

import pytest

from tests.cluster import unique_name
from tests.e2e.conftest import (
    GIT_PASSWORD,
    GIT_USER,
    REGISTRY_PASSWORD,
    REGISTRY_USER,
    Tarballs,
)
from tests.e2e.helpers import BUNDLES, E2E, condition, plain_layer, tgz
from tests.manifests import cm_manifest
from tests.provisioners.git_servers import Repo
from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry, Tls

pytestmark = pytest.mark.cluster


def _bundle_of(e2e: E2E, bd: dict[str, object]) -> dict[str, object]:
    return e2e.kube.get(BUNDLES, str(bd["status"]["activeBundle"]))  # type: ignore[index]


def test_image_source(e2e: E2E, registry: Registry, pusher: Pusher) -> None:
    repo = unique_name("img")
    digest = pusher.image(
        repo, "v1", [plain_layer({"cm.yaml": cm_manifest("from-image", e2e.namespace)})]
    )
    name = e2e.deploy({"type": "image", "image": {"ref": f"{registry.host}/{repo}:v1"}})
    bd = e2e.wait_installed(name)
    assert e2e.config_map_in("from-image") is not None
    bundle = _bundle_of(e2e, bd)
    status = bundle["status"]
    assert isinstance(status, dict)
    assert status["phase"] == "Unpacked"
    assert status["resolvedSource"]["image"]["ref"].endswith(f"@{digest}")
    # A tag can move: the Unpacked condition says so.
    assert "tag" in condition(bundle, "Unpacked")["message"]


def test_private_image_with_pull_secret(e2e: E2E, private_registry: Registry) -> None:
    repo = unique_name("private")
    Pusher(private_registry.base, REGISTRY_USER, REGISTRY_PASSWORD).image(
        repo, "v1", [plain_layer({"cm.yaml": cm_manifest("from-private", e2e.namespace)})]
    )
    ref = f"{private_registry.host}/{repo}:v1"
    # Without credentials the registry refuses: an actionable UnpackFailed.
    refused = e2e.deploy({"type": "image", "image": {"ref": ref}})
    bd = e2e.wait_unpack_failed(refused)
    message = condition(bd, "HasValidBundle")["message"]
    assert "pullSecret" in message or "authentication" in message.lower(), message

    config = json.dumps(
        {
            "auths": {
                private_registry.host: {"username": REGISTRY_USER, "password": REGISTRY_PASSWORD}
            }
        }
    ).encode()
    secret = e2e.secret({".dockerconfigjson": config}, "kubernetes.io/dockerconfigjson")
    name = e2e.deploy({"type": "image", "image": {"ref": ref, "pullSecret": secret}})
    e2e.wait_installed(name)
    assert e2e.config_map_in("from-private") is not None


def _git_source(url: str, ref: dict[str, str], directory: str = "bundle") -> dict[str, object]:
    git_spec: dict[str, object] = {"repository": url, "ref": ref}
    if directory:
        git_spec["directory"] = directory
    return {"type": "git", "git": git_spec}


def test_git_branch_tag_commit_and_directory(
    e2e: E2E, git_http: str, public_repo: Repo, git_namespace: str
) -> None:
    url = f"{git_http}/public.git"
    # make_bundle_repo: commit 1 (tag v1) names the ConfigMap "first", commit 2 (main, dev)
    # "second", both under bundle/manifests/; commit 2 also has manifests/ at the root naming
    # "root". The objects share one namespace, so the BundleDeployments go one at a time.
    cases = [
        ({"branch": "main"}, "bundle", "second", public_repo.second),
        ({"tag": "v1"}, "bundle", "first", public_repo.first),
        ({"commit": public_repo.first}, "bundle", "first", public_repo.first),
        ({"branch": "dev"}, "", "root", public_repo.second),
    ]
    for ref, directory, expected, commit in cases:
        name = e2e.deploy(_git_source(url, ref, directory))
        bd = e2e.wait_installed(name)
        assert e2e.config_map_in(expected, git_namespace) is not None, (ref, directory)
        resolved = _bundle_of(e2e, bd)["status"]["resolvedSource"]  # type: ignore[index]
        assert resolved["git"]["ref"]["commit"] == commit, resolved
        e2e.delete(name)
        assert e2e.config_map_in(expected, git_namespace) is None


def test_git_https_basic_auth(
    e2e: E2E, git_https_private: str, tls: Tls, git_namespace: str
) -> None:
    url = f"{git_https_private}/private.git"
    wrong = e2e.secret(
        {"username": GIT_USER.encode(), "password": b"wrong", "ca.crt": tls.ca_pem},
        "kubernetes.io/basic-auth",
    )
    source = _git_source(url, {"tag": "v1"})
    source["git"]["auth"] = {"secret": {"name": wrong}}  # type: ignore[index]
    failing = e2e.deploy(source)
    bd = e2e.wait_unpack_failed(failing)
    assert "authentication" in condition(bd, "HasValidBundle")["message"].lower()
    e2e.delete(failing)

    good = e2e.secret(
        {"username": GIT_USER.encode(), "password": GIT_PASSWORD.encode(), "ca.crt": tls.ca_pem},
        "kubernetes.io/basic-auth",
    )
    source = _git_source(url, {"tag": "v1"})
    source["git"]["auth"] = {"secret": {"name": good}}  # type: ignore[index]
    name = e2e.deploy(source)
    e2e.wait_installed(name)
    assert e2e.config_map_in("first", git_namespace) is not None
    bundle = e2e.kube.get(BUNDLES, e2e.get(name)["status"]["activeBundle"])
    assert GIT_PASSWORD not in json.dumps(bundle), "a credential leaked into the Bundle"


def test_http_tarball(e2e: E2E, tarballs: Tarballs) -> None:
    url = tarballs.publish(
        f"/{unique_name('tb')}.tgz",
        tgz(plain_layer({"cm.yaml": cm_manifest("from-http", e2e.namespace)})),
    )
    name = e2e.deploy({"type": "http", "http": {"url": url}})
    bd = e2e.wait_installed(name)
    assert e2e.config_map_in("from-http") is not None
    status = _bundle_of(e2e, bd)["status"]
    assert status["resolvedSource"]["type"] == "http"  # type: ignore[index]


def test_config_maps(e2e: E2E) -> None:
    first = e2e.config_map({"a.yaml": cm_manifest("from-cm-a", e2e.namespace)})
    second = e2e.config_map({"b.yaml": cm_manifest("from-cm-b", e2e.namespace)})
    name = e2e.deploy(
        {
            "type": "configMaps",
            "configMaps": [
                {"configMap": {"name": first}, "path": "manifests"},
                {"configMap": {"name": second}, "path": "manifests"},
            ],
        }
    )
    bd = e2e.wait_installed(name)
    assert e2e.config_map_in("from-cm-a") is not None
    assert e2e.config_map_in("from-cm-b") is not None
    assert {i["name"] for i in bd["status"]["inventory"]} == {"from-cm-a", "from-cm-b"}
