"""rukpak's documentation examples on ``pivoter run``.

Every YAML document of rukpak's docs (``tests/e2e/rukpak_docs/``) passes validation unchanged: a
server-side dry run with strict field validation, through the CRDs and the admission webhook.
The plain ones then run with only the image reference or repository URL pointed at the local
registry and git server (the commit example also needs a local commit id) and behave as the docs
say: Bundles reach ``Unpacked``; the combo walk-through installs, upgrades to v0.0.2 (new Bundle,
old one deleted, new image) and uninstalls.
"""

from __future__ import annotations

import copy
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.kube import Invalid, NotFound
from tests.cluster import wait_for
from tests.e2e.conftest import REGISTRY_PASSWORD, REGISTRY_USER
from tests.e2e.helpers import BUNDLE_DEPLOYMENTS, BUNDLES, E2E, NAMESPACES, installed, plain_layer
from tests.manifests import cm_manifest
from tests.provisioners.git_servers import git
from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster

DOCS = Path(__file__).parent / "rukpak_docs"
DOCUMENTS = [
    pytest.param(doc, id=f"{path.stem}#{index}-{doc['metadata']['name']}")
    for path in sorted(DOCS.glob("*.yaml"))
    for index, doc in enumerate(yaml.safe_load_all(path.read_text()), start=1)
]


def _docs(page: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((DOCS / f"{page}.yaml").read_text()))


# rukpak's git page nests insecureSkipVerify under auth.secret, where rukpak's own API (a
# LocalObjectReference) has no such field either: a strict apply fails on rukpak the same way.
UPSTREAM_DOC_ERRORS = {"combo-private": "spec.source.git.auth.secret.insecureSkipVerify"}


def _contains(actual: Any, expected: Any) -> bool:
    """Whether ``actual`` has every field of ``expected`` with the same value (defaults may add)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _contains(actual[key], value) for key, value in expected.items()
        )
    return bool(actual == expected)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_document_passes_validation_unchanged(e2e: E2E, document: dict[str, Any]) -> None:
    resource = BUNDLES if document["kind"] == "Bundle" else BUNDLE_DEPLOYMENTS
    path = resource.path(None)
    unknown = UPSTREAM_DOC_ERRORS.get(document["metadata"]["name"])
    if unknown:
        with pytest.raises(Invalid, match=f'unknown field "{unknown}"'):
            e2e.kube.send(
                "POST",
                path,
                query=[("dryRun", "All"), ("fieldValidation", "Strict")],
                body=document,
            )
        # As on rukpak, without strict validation the unknown field is pruned and the rest holds.
        answer = e2e.kube.send("POST", path, query=[("dryRun", "All")], body=document)
        assert any(unknown.rsplit(".", 1)[1] in w for w in answer.warnings), answer.warnings
        return
    answer = e2e.kube.send(
        "POST", path, query=[("dryRun", "All"), ("fieldValidation", "Strict")], body=document
    )
    assert answer.body["metadata"]["name"] == document["metadata"]["name"]
    assert _contains(answer.body["spec"], document["spec"]), "the API server changed fields"


def _combo_bundle(pusher: Pusher, version: str) -> str:
    """A stand-in for quay.io/operator-framework/combo-bundle: namespace combo and the
    combo-operator Deployment, as the walk-through expects."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "combo"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "combo-operator", "namespace": "combo"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "combo-operator"}},
            "template": {
                "metadata": {"labels": {"app": "combo-operator"}},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": f"quay.io/operator-framework/combo-operator:{version}",
                        }
                    ]
                },
            },
        },
    }
    pusher.image(
        "operator-framework/combo-bundle",
        version,
        [
            plain_layer(
                {
                    "00-namespace.yaml": yaml.safe_dump(namespace),
                    "deployment.yaml": yaml.safe_dump(deployment),
                }
            )
        ],
    )
    return version


def _pointed(doc: dict[str, Any], **source: Any) -> dict[str, Any]:
    """``doc`` with only fields of its template's (or its own) source replaced."""
    out = copy.deepcopy(doc)
    spec = out["spec"]["template"]["spec"] if out["kind"] == "BundleDeployment" else out["spec"]
    kind = spec["source"]["type"]
    spec["source"][kind].update(source)
    return out


def _image_of(e2e: E2E) -> str:
    """The combo-operator Deployment's image ("" while it does not exist)."""
    deployments = e2e.kube.resource("apps/v1", "Deployment")
    try:
        deployment = e2e.kube.get(deployments, "combo-operator", "combo")
    except NotFound:
        return ""
    if deployment["metadata"].get("deletionTimestamp"):
        return ""
    return str(deployment["spec"]["template"]["spec"]["containers"][0]["image"])


@pytest.mark.kwok
def test_combo_walk_through(e2e: E2E, registry: Registry, pusher: Pusher) -> None:
    _combo_bundle(pusher, "v0.0.1")
    _combo_bundle(pusher, "v0.0.2")
    _, install, upgrade = _docs("provisioners-plain")
    ref = f"{registry.host}/operator-framework/combo-bundle"
    e2e.create(_pointed(install, ref=f"{ref}:v0.0.1"))
    bd = e2e.wait_installed("combo")
    first = bd["status"]["activeBundle"]
    assert first.startswith("combo-")
    assert e2e.bundles_of("combo") == [first]
    bundle = e2e.kube.get(BUNDLES, first)
    assert bundle["metadata"]["labels"]["app"] == "combo"
    assert bundle["status"]["phase"] == "Unpacked"
    assert _image_of(e2e) == "quay.io/operator-framework/combo-operator:v0.0.1"
    e2e.wait(
        "combo",
        lambda bd: (
            bd["status"]["conditions"]
            and any(
                c["type"] == "Healthy" and c["status"] == "True" for c in bd["status"]["conditions"]
            )
        ),
        what="Healthy (the operator's pod runs)",
        timeout=120,
    )

    # "The provisioner ensures that all resources required ... are accounted for on-cluster":
    # a deleted Deployment comes back.
    deployments = e2e.kube.resource("apps/v1", "Deployment")
    e2e.kube.delete(deployments, "combo-operator", "combo")
    wait_for(
        lambda: _image_of(e2e) == "quay.io/operator-framework/combo-operator:v0.0.1",
        timeout=60,
        what="the deleted combo-operator Deployment to be re-created",
    )

    # Upgrade: `kubectl apply` of the v0.0.2 document (a patch, as kubectl sends: a PUT of a
    # copy read earlier loses to the controller's status writes).
    spec = _pointed(upgrade, ref=f"{ref}:v0.0.2")["spec"]
    e2e.kube.merge_patch(BUNDLE_DEPLOYMENTS, "combo", {"spec": spec})
    bd = e2e.wait(
        "combo",
        lambda bd: installed(bd) and bd["status"]["activeBundle"] != first,
        what="the upgrade to v0.0.2",
    )
    second = bd["status"]["activeBundle"]
    wait_for(lambda: e2e.bundles_of("combo") == [second], timeout=30, what="old Bundle deleted")
    assert _image_of(e2e) == "quay.io/operator-framework/combo-operator:v0.0.2"

    # Uninstall: the deployment, and the operator namespace, go.
    e2e.delete("combo")

    def namespace_going() -> bool:
        try:
            return bool(e2e.kube.get(NAMESPACES, "combo")["metadata"].get("deletionTimestamp"))
        except NotFound:
            return True

    wait_for(namespace_going, timeout=60, what="namespace combo deleted")


def test_image_examples(e2e: E2E, registry: Registry, private_registry: Registry) -> None:
    public, private = _docs("sources-image")
    Pusher(registry.base).image(
        "operator-framework/rukpak",
        "example",
        [plain_layer({"cm.yaml": cm_manifest("rukpak-example", e2e.namespace)})],
    )
    e2e.create(_pointed(public, ref=f"{registry.host}/operator-framework/rukpak:example"))
    e2e.wait_installed("my-bundle")
    assert e2e.config_map_in("rukpak-example") is not None
    e2e.delete("my-bundle")

    Pusher(private_registry.base, REGISTRY_USER, REGISTRY_PASSWORD).image(
        "my-registry/rukpak",
        "example",
        [plain_layer({"cm.yaml": cm_manifest("rukpak-private", e2e.namespace)})],
    )
    # `kubectl create secret docker-registry mysecret ... -n <system namespace>`
    config = json.dumps(
        {
            "auths": {
                private_registry.host: {"username": REGISTRY_USER, "password": REGISTRY_PASSWORD}
            }
        }
    ).encode()
    e2e.secret({".dockerconfigjson": config}, "kubernetes.io/dockerconfigjson", name="mysecret")
    try:
        e2e.create(_pointed(private, ref=f"{private_registry.host}/my-registry/rukpak:example"))
        e2e.wait_installed("my-bundle")
        assert e2e.config_map_in("rukpak-private") is not None
    finally:
        e2e.kube.delete(e2e.kube.resource("v1", "Secret"), "mysecret", e2e.system_namespace)


def test_git_examples(e2e: E2E, git_http: str, git_root: Path, tmp_path: Path) -> None:
    # Stand-ins for github.com/operator-framework/combo and github.com/exdx/combo-bundle.
    work = tmp_path / "combo"
    (work / "manifests").mkdir(parents=True)
    (work / "dev" / "deploy" / "manifests").mkdir(parents=True)
    (work / "manifests" / "cm.yaml").write_text(cm_manifest("combo-git", e2e.namespace))
    (work / "dev" / "deploy" / "manifests" / "cm.yaml").write_text(
        cm_manifest("combo-git-dev", e2e.namespace)
    )
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "combo", cwd=work)
    git("tag", "v0.0.2", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    for name in ("combo.git", "combo-bundle.git"):
        git("clone", "--quiet", "--bare", str(work), str(git_root / name))

    commit_ref, tag_ref, branch_ref, directory_ref, _, _ = _docs("sources-git")
    documents = [
        _pointed(commit_ref, repository=f"{git_http}/combo.git", ref={"commit": commit}),
        _pointed(tag_ref, repository=f"{git_http}/combo.git"),
        _pointed(branch_ref, repository=f"{git_http}/combo.git"),
        _pointed(directory_ref, repository=f"{git_http}/combo-bundle.git"),
    ]
    created = []
    try:
        for document in documents:
            e2e.kube.create(BUNDLES, document)
            created.append(document["metadata"]["name"])
        for name in created:
            wait_for(
                partial(_phase_is, e2e, name, "Unpacked"),
                timeout=60,
                what=f"Bundle {name} Unpacked",
            )
            status = e2e.kube.get(BUNDLES, name)["status"]
            assert status["resolvedSource"]["git"]["ref"]["commit"] == commit, status
    finally:
        for name in created:
            e2e.kube.delete(BUNDLES, name)


def _phase_is(e2e: E2E, name: str, phase: str) -> bool:
    return bool((e2e.kube.get(BUNDLES, name).get("status") or {}).get("phase") == phase)
