"""pivoter's own lifecycle on a real node: install, upgrade, check, uninstall, install again.

One story, in order, on a control plane without kwok and one real node (:mod:`tests.image.realnode`;
its pods reach the API server at the ``kubernetes`` Service's address, as with kube-proxy, so
``pivoter install``'s manifests run unpatched):

1. ``pivoter install`` as a user without rights is refused with the list of what is missing, and
   nothing is applied; ``pivoter check --pre`` says the same, and passes for the admin.
2. The previous release (the newest ``v*`` tag before HEAD, its image built from that commit,
   its ``crds/`` and ``deploy/`` applied with kubectl as its docs said) installs inputs of every
   kind: a BundleDeployment, a Resolution and a PlatformOperator from a Catalog, a ClusterExtension
   from a ClusterCatalog, each running a real pod. ``pivoter check`` of this build warns of the
   version skew. ``pivoter install`` upgrades it: no installed object is re-created, no pod
   restarts, every input keeps its revisions, the CRDs' stored versions stay served; a downgrade is
   refused.
3. ``pivoter uninstall`` is refused while inputs exist; ``--keep-workloads --backup`` removes
   pivoter (no CRD, webhook configuration or namespace of pivoter's left) and every pod runs on.
4. ``install.yaml`` (``pivoter install --dry-run``'s, as a release ships it) applied with kubectl
   and the backup applied: the inputs install what runs, with nothing re-created and no pod
   restarted; ``pivoter check`` passes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.kube import Kube, NotFound, Resource
from tests.clirun import pivoter
from tests.cluster import TestCluster, wait_for
from tests.image.images import REPO, BuiltImage, build, podman
from tests.image.realnode import GATEWAY, RealNode, real_node
from tests.inputs.helpers import Publisher, Version
from tests.olmv1.content import Bundle, bundle_files, push_image_with
from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry, make_tls, run_registry
from tests.tools import tool

_CHANGELOG = REPO / "CHANGELOG.md"

pytestmark = [pytest.mark.cluster, pytest.mark.tools, pytest.mark.slow, pytest.mark.timeout(2400)]

NAMESPACE = "pivoter-system"
APPS = "lifecycle-apps"
PODS = Resource("v1", "Pod", "pods", namespaced=True)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
WEBHOOKS = Resource(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
BUNDLE_DEPLOYMENTS = Resource(
    "core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", False
)
RESOLUTIONS = Resource("pivoter.io/v1alpha1", "Resolution", "resolutions", False)
PLATFORM_OPERATORS = Resource(
    "platform.openshift.io/v1alpha1", "PlatformOperator", "platformoperators", False
)
CLUSTER_EXTENSIONS = Resource(
    "olm.operatorframework.io/v1", "ClusterExtension", "clusterextensions", False
)
PIVOTER_GROUPS = (
    "core.rukpak.io",
    "pivoter.io",
    "platform.openshift.io",
    "olm.operatorframework.io",
)
STATE: dict[str, Any] = {}
"""What one step of the story leaves for the next (the tests run in file order)."""
# Each input and its package; its bundle runs one Deployment of one pod (the pause image).
INPUTS = {
    "bd": (BUNDLE_DEPLOYMENTS, "app-bd"),
    "resolution": (RESOLUTIONS, "app-res"),
    "platformoperator": (PLATFORM_OPERATORS, "app-po"),
    "clusterextension": (CLUSTER_EXTENSIONS, "app-ce"),
}


def _previous_release() -> str | None:
    """The newest release before HEAD (``$PIVOTER_UPGRADE_FROM`` if set): its tag, or, in a clone
    without tags (CI's checkout of one branch), the commit CHANGELOG.md records for it."""
    if os.environ.get("PIVOTER_UPGRADE_FROM"):
        return os.environ["PIVOTER_UPGRADE_FROM"]
    git = ["git", "-C", str(REPO)]
    at_head = set(
        subprocess.run(
            [*git, "tag", "--points-at", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.split()
    )
    tags = subprocess.run(
        [*git, "tag", "--list", "v*", "--merged", "HEAD", "--sort=-v:refname"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    tagged = next((t for t in tags if t not in at_head), None)
    if tagged is not None:
        return tagged
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    for commit in re.findall(r"^commit: ([0-9a-f]{40})$", _CHANGELOG.read_text(), re.MULTILINE):
        ancestor = subprocess.run(
            [*git, "merge-base", "--is-ancestor", commit, "HEAD"], capture_output=True, check=False
        )
        if commit != head and ancestor.returncode == 0:
            return commit
    return None


def kubectl(cluster: TestCluster, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(tool("kubectl")), "--kubeconfig", str(cluster.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def cli(
    cluster: TestCluster, *args: str, kubeconfig: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return pivoter(*args, "--kubeconfig", str(kubeconfig or cluster.kubeconfig), timeout=timeout)


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release() -> str:
    tag = _previous_release()
    if tag is None:
        pytest.skip("no release before HEAD to upgrade from (no v* tag, none in CHANGELOG.md)")
    return tag


@pytest.fixture(scope="module")
def old_tree(release: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's files (its crds/ and deploy/)."""
    directory = tmp_path_factory.mktemp("release")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", release, "crds", "deploy"],
        capture_output=True,
        check=True,
    ).stdout
    (directory / "tree.tar").write_bytes(archive)
    with tarfile.open(directory / "tree.tar") as tar:
        tar.extractall(directory / "tree", filter="data")
    return directory / "tree"


@pytest.fixture(scope="module")
def old_image(
    release: str, image_registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BuiltImage]:
    log = tmp_path_factory.mktemp("old-image") / "build.log"
    previous = os.environ.get("PIVOTER_IMAGE_REVISION")
    os.environ["PIVOTER_IMAGE_REVISION"] = release
    try:
        image = build(f"localhost/pivoter:{release}-upgrade-test", image_registry.host, log)
    finally:
        if previous is None:
            os.environ.pop("PIVOTER_IMAGE_REVISION", None)
        else:
            os.environ["PIVOTER_IMAGE_REVISION"] = previous
    print(f"\n{release}'s image built in {image.seconds:.0f} s")
    yield image
    podman("rmi", "--force", image.tag)


@pytest.fixture(scope="module")
def node_cluster() -> Iterator[TestCluster]:
    handle = TestCluster.start(kwok=False)  # kwok would answer for the real node's pods too
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def kube(node_cluster: TestCluster) -> Kube:
    return Kube(node_cluster.api_client())


def _registry_port(registry: Registry) -> int:
    return int(registry.host.rpartition(":")[2])


@pytest.fixture(scope="module")
def content_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """The bundles' and catalog's registry, over https with a certificate for 127.0.0.1 only: the
    daemon reaches it at the node's gateway as an insecure registry (both releases speak https
    without certificate checks there; only the newer one falls back to plain http)."""
    tls = make_tls(tmp_path_factory.mktemp("content-tls"))
    with run_registry(tmp_path_factory.mktemp("content-registry"), tls=tls) as running:
        STATE["content_ca"] = tls.ca_pem
        yield running


@pytest.fixture(scope="module")
def node(
    node_cluster: TestCluster,
    kube: Kube,
    image_registry: Registry,
    content_registry: Registry,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealNode]:
    with real_node(
        node_cluster,
        kube,
        image_registry.host,
        tmp_path_factory.mktemp("node"),
        forwards=(_registry_port(content_registry),),
    ) as running:
        yield running


@pytest.fixture(scope="module")
def registries_conf(content_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The daemon reaches the content registry at the node's gateway, as an insecure registry."""
    path = tmp_path_factory.mktemp("registries") / "registries.conf"
    location = f"{GATEWAY}:{_registry_port(content_registry)}"
    path.write_text(f'[[registry]]\nlocation = "{location}"\ninsecure = true\n')
    return path


@pytest.fixture(scope="module")
def catalog(
    image_registry: Registry,
    content_registry: Registry,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """Four packages, one bundle each, running one pause pod; returns the FBC text and the
    catalog image's reference (both name the bundles at the gateway's address)."""
    directory = tmp_path_factory.mktemp("fbc")
    at_gateway = f"{GATEWAY}:{_registry_port(content_registry)}"
    pusher = Pusher(content_registry.base, None, None, STATE["content_ca"])
    publisher = Publisher(pusher, at_gateway, directory)
    for _, name in INPUTS.values():
        if name == "app-ce":  # OLM v1 installs registry+v1 bundles only
            files = bundle_files("life", name, Bundle("1.0.0", contents=("Deployment",)))
            pause = f"{image_registry.host}/pivoter-pause:1"
            text = {path: body.replace("busybox:1.36", pause) for path, body in files.items()}
            version = Version("1.0.0", "", mediatype="registry+v1", files=tuple(text.items()))
            publisher.add(name, version)
        else:
            publisher.add(name, Version("1.0.0", _workload(name, image_registry)))
    publisher.publish()
    fbc = "".join("---\n" + path.read_text() for path in sorted(directory.glob("*.yaml")))
    push_image_with(
        pusher,
        "lifecycle/catalog",
        "v1",
        {"configs/catalog.yaml": fbc},
        {"operators.operatorframework.io.index.configs.v1": "/configs"},
    )
    return {"fbc": fbc, "image": f"{at_gateway}/lifecycle/catalog:v1"}


def _workload(name: str, registry: Registry) -> str:
    labels = {"app": name}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": APPS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {"name": "main", "image": f"{registry.host}/pivoter-pause:1"}
                        ]
                    },
                },
            },
        }
    )


# -- helpers -----------------------------------------------------------------------------------


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def _old_overlay(directory: Path, tree: Path, image: str, registries: Path) -> Path:
    """The previous release's deploy/ as its docs said: the image set, plus the registries.conf
    this machine needs (a ConfigMap mounted into the daemon)."""
    shutil.copytree(tree / "deploy", directory / "base")
    name, _, tag = image.rpartition(":")
    (directory / "registries.conf").write_text(registries.read_text())
    mount = [
        {
            "op": "add",
            "path": "/spec/template/spec/volumes/-",
            "value": {"name": "registries", "configMap": {"name": "pivoter-registries"}},
        },
        {
            "op": "add",
            "path": "/spec/template/spec/containers/0/volumeMounts/-",
            "value": {
                "name": "registries",
                "mountPath": "/etc/pivoter/registries",
                "readOnly": True,
            },
        },
        {
            "op": "add",
            "path": "/spec/template/spec/containers/0/args/-",
            "value": "--registries-conf=/etc/pivoter/registries/registries.conf",
        },
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["base"],
        "images": [{"name": "ghcr.io/pivoter/pivoter", "newName": name, "newTag": tag}],
        "configMapGenerator": [
            {
                "name": "pivoter-registries",
                "namespace": NAMESPACE,
                "files": ["registries.conf"],
                "options": {"disableNameSuffixHash": True},
            }
        ],
        "patches": [
            {"target": {"kind": "Deployment", "name": "pivoter"}, "patch": yaml.safe_dump(mount)}
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def _daemon_ready(kube: Kube, image: str) -> bool:
    deployment = kube.get(DEPLOYMENTS, "pivoter", NAMESPACE)
    status = deployment.get("status") or {}
    template_image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    return (
        template_image == image
        and status.get("readyReplicas") == 2
        and status.get("updatedReplicas") == 2
        and status.get("replicas") == 2
    )


def _inputs(catalog: dict[str, str]) -> str:
    """The inputs of every kind, as a user writes them."""
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "installer", "namespace": APPS},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "lifecycle-installer"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": APPS}],
        },
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": "lifecycle"},
            "spec": {
                "source": {"type": "configMaps", "configMaps": [{"name": "lifecycle-catalog"}]}
            },
        },
        {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "app-bd"},
            "spec": {
                "provisionerClassName": "core-rukpak-io-plain",
                "template": {
                    "spec": {
                        "provisionerClassName": "core-rukpak-io-plain",
                        "source": {
                            "type": "image",
                            "image": {"ref": _bundle_image(catalog, "app-bd")},
                        },
                    }
                },
            },
        },
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": {"name": "app-res"},
            "spec": {"packages": [{"name": "app-res"}]},
        },
        {
            "apiVersion": "platform.openshift.io/v1alpha1",
            "kind": "PlatformOperator",
            "metadata": {"name": "app-po"},
            "spec": {"package": {"name": "app-po"}},
        },
        {
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "lifecycle"},
            "spec": {"source": {"type": "Image", "image": {"ref": catalog["image"]}}},
        },
        {
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "app-ce"},
            "spec": {
                "namespace": APPS,
                "serviceAccount": {"name": "installer"},
                "source": {"sourceType": "Catalog", "catalog": {"packageName": "app-ce"}},
            },
        },
    ]
    return yaml.safe_dump_all(documents, sort_keys=False)


def _bundle_image(catalog: dict[str, str], package: str) -> str:
    for document in yaml.safe_load_all(catalog["fbc"]):
        if document and document.get("schema") == "olm.bundle" and document["package"] == package:
            return str(document["image"])
    raise AssertionError(f"no bundle of {package}")


def _catalog_config_map(kubectl_cluster: TestCluster, catalog: dict[str, str]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "lifecycle-catalog", "namespace": NAMESPACE},
        "data": {"catalog.yaml": catalog["fbc"]},
    }
    kubectl(kubectl_cluster, "apply", "-f", "-", stdin=yaml.safe_dump(body))


def _installed(kube: Kube) -> dict[str, bool]:
    return {
        key: _condition(kube.get(resource, name), "Installed")
        for key, (resource, name) in INPUTS.items()
    }


def _wait_installed(kube: Kube, what: str) -> None:
    def all_installed() -> bool:
        try:
            return all(_installed(kube).values())
        except NotFound:
            return False

    try:
        wait_for(all_installed, timeout=300, what=what)
    except AssertionError as exc:
        for resource, name in INPUTS.values():
            try:
                status = kube.get(resource, name).get("status") or {}
                exc.add_note(f"{resource.kind} {name}: {json.dumps(status.get('conditions'))}")
            except NotFound:
                exc.add_note(f"{resource.kind} {name}: missing")
        raise


def _deployment_of(package: str) -> str:
    """The Deployment a package's bundle runs (registry+v1: the CSV's, tests.olmv1.content)."""
    return "test-operator-life-app-ce" if package == "app-ce" else package


def _workloads(kube: Kube) -> dict[str, tuple[str, str, int]]:
    """Each workload's Deployment uid, its running pod's uid and restart count."""
    state = {}
    for _, package in INPUTS.values():
        name = _deployment_of(package)
        deployment = kube.get(DEPLOYMENTS, name, APPS)
        pods = [
            p
            for p in kube.list(PODS, APPS, label_selector=f"app={name}")[0]
            if p["status"].get("phase") == "Running"
        ]
        assert len(pods) == 1, f"{name}: {len(pods)} running pods"
        restarts = sum(
            int(c.get("restartCount") or 0)
            for c in pods[0]["status"].get("containerStatuses") or []
        )
        state[name] = (deployment["metadata"]["uid"], pods[0]["metadata"]["uid"], restarts)
    return state


def _revisions(kube: Kube) -> dict[str, str]:
    return {
        key: str((kube.get(resource, name).get("status") or {}).get("activeRevision") or "")
        for key, (resource, name) in INPUTS.items()
        if resource in (RESOLUTIONS, CLUSTER_EXTENSIONS, PLATFORM_OPERATORS)
    }


def _pivoter_crds(kube: Kube) -> list[str]:
    return [
        crd["metadata"]["name"]
        for crd in kube.list(CRDS)[0]
        if crd["spec"]["group"] in PIVOTER_GROUPS
    ]


# -- the story ---------------------------------------------------------------------------------


def test_install_without_rights_is_refused_and_applies_nothing(
    node_cluster: TestCluster, kube: Kube, node: RealNode
) -> None:
    alice = node_cluster.user_kubeconfig("alice", ["lifecycle-testers"])
    # alice may read and create namespaces and nothing else.
    kubectl(
        node_cluster,
        "create",
        "clusterrole",
        "lifecycle-namespaces",
        "--verb=get,create,patch",
        "--resource=namespaces",
    )
    kubectl(
        node_cluster,
        "create",
        "clusterrolebinding",
        "lifecycle-namespaces",
        "--clusterrole=lifecycle-namespaces",
        "--user=alice",
    )
    refused = cli(node_cluster, "install", kubeconfig=alice)
    assert refused.returncode == 1, refused.stderr
    assert "nothing was applied" in refused.stderr
    assert "create customresourcedefinitions.apiextensions.k8s.io" in refused.stderr
    assert "escalate" not in refused.stderr  # what is missing is listed, not the way around it
    assert "(for ClusterRole pivoter-installer)" in refused.stderr
    with pytest.raises(NotFound):
        kube.get(NAMESPACES, NAMESPACE)
    assert _pivoter_crds(kube) == []
    pre = cli(node_cluster, "check", "--pre", "-o", "json", kubeconfig=alice)
    assert pre.returncode == 1
    assert {f["check"]: f["status"] for f in json.loads(pre.stdout)}["rights"] == "failed"
    admin = cli(node_cluster, "check", "--pre", "-o", "json")
    assert admin.returncode == 0, admin.stdout + admin.stderr
    statuses = {f["check"]: f["status"] for f in json.loads(admin.stdout)}
    assert statuses["rights"] == "ok"
    assert statuses["kubernetes"] == "ok"


def test_upgrade_from_the_previous_release_keeps_everything_running(
    node_cluster: TestCluster,
    kube: Kube,
    node: RealNode,
    *,
    release: str,
    old_tree: Path,
    old_image: BuiltImage,
    built_image: BuiltImage,
    catalog: dict[str, str],
    registries_conf: Path,
    tmp_path: Path,
) -> None:
    # The previous release, installed as its docs said.
    kubectl(node_cluster, "apply", "--server-side", "-f", str(old_tree / "crds"))
    kubectl(node_cluster, "apply", "--server-side", "-f", str(old_tree / "crds" / "olmv1"))
    overlay = _old_overlay(tmp_path / "overlay", old_tree, old_image.pushed, registries_conf)
    kubectl(node_cluster, "apply", "-k", str(overlay))
    wait_for(lambda: _daemon_ready(kube, old_image.pushed), timeout=300, what=f"{release} ready")
    _catalog_config_map(node_cluster, catalog)
    kubectl(node_cluster, "apply", "-f", "-", stdin=_inputs(catalog))
    _wait_installed(kube, f"every input installed by {release}")
    wait_for(lambda: bool(_workloads(kube)), timeout=180, what="every workload's pod running")
    before = _workloads(kube)
    revisions = _revisions(kube)
    stored = {
        name: kube.get(CRDS, name)["status"]["storedVersions"] for name in _pivoter_crds(kube)
    }

    # This build's check sees the older daemon and says so.
    skew = cli(node_cluster, "check", "-o", "json")
    findings = {f["check"]: f for f in json.loads(skew.stdout)}
    assert findings["version"]["status"] == "warning", skew.stdout
    assert "pivoter install" in findings["version"]["message"]

    upgrade = cli(
        node_cluster,
        "install",
        "--image",
        built_image.pushed,
        "--olmv1-apis",
        "--registries-conf",
        str(registries_conf),
    )
    assert upgrade.returncode == 0, upgrade.stderr
    assert "upgrading pivoter" in upgrade.stderr
    assert "ready" in upgrade.stderr  # progress was shown
    assert _daemon_ready(kube, built_image.pushed)
    wait_for(
        lambda: cli(node_cluster, "check").returncode == 0,
        timeout=120,
        what="pivoter check to pass",
    )
    # The new leader has looked at every input; give it time to do anything it would do.
    time.sleep(20)
    _wait_installed(kube, "every input still installed after the upgrade")
    assert _workloads(kube) == before, "an installed object was re-created or a pod restarted"
    assert _revisions(kube) == revisions
    for name, versions in stored.items():
        assert kube.get(CRDS, name)["status"]["storedVersions"] == versions

    # A downgrade is refused: the installed daemon looks newer than this command.
    patch = {"metadata": {"labels": {"app.kubernetes.io/version": "99.0.0"}}}
    kube.merge_patch(DEPLOYMENTS, "pivoter", patch, namespace=NAMESPACE)
    generation = kube.get(DEPLOYMENTS, "pivoter", NAMESPACE)["metadata"]["generation"]
    downgrade = cli(node_cluster, "install", "--image", old_image.pushed)
    assert downgrade.returncode == 1
    assert "downgrade is refused" in downgrade.stderr
    assert kube.get(DEPLOYMENTS, "pivoter", NAMESPACE)["metadata"]["generation"] == generation
    STATE["workloads"] = before


def test_uninstall_keeps_the_workloads_and_leaves_nothing_of_pivoter(
    node_cluster: TestCluster,
    kube: Kube,
    node: RealNode,
    *,
    release: str,  # the inputs it removes pivoter from are the upgrade test's
    built_image: BuiltImage,
    tmp_path: Path,
) -> None:
    refused = cli(node_cluster, "uninstall")
    assert refused.returncode == 1
    for _, name in INPUTS.values():
        assert name in refused.stderr
    assert "--keep-workloads" in refused.stderr
    assert kube.get(DEPLOYMENTS, "pivoter", NAMESPACE)["spec"]["replicas"] == 2

    backup = tmp_path / "backup"
    removed = cli(
        node_cluster, "uninstall", "--keep-workloads", "--backup", str(backup), "--olmv1-apis"
    )
    assert removed.returncode == 0, removed.stderr
    assert _pivoter_crds(kube) == []
    names = [w["metadata"]["name"] for w in kube.list(WEBHOOKS)[0]]
    assert "pivoter-validating-webhooks" not in names
    with pytest.raises(NotFound):
        kube.get(NAMESPACES, NAMESPACE)
    time.sleep(10)
    assert _workloads(kube) == STATE["workloads"]
    for deployment in kube.list(DEPLOYMENTS, APPS)[0]:
        assert not deployment["metadata"].get("finalizers")
        assert not deployment["metadata"].get("ownerReferences")
    kept = list(yaml.safe_load_all((backup / "pivoter-inputs.yaml").read_text()))
    assert {d["metadata"]["name"] for d in kept} >= {name for _, name in INPUTS.values()}
    STATE["backup"] = backup / "pivoter-inputs.yaml"


def test_installing_again_takes_over_what_runs(
    node_cluster: TestCluster,
    kube: Kube,
    node: RealNode,
    *,
    release: str,  # what it installs again is what the upgrade test installed
    built_image: BuiltImage,
    catalog: dict[str, str],
    registries_conf: Path,
    tmp_path: Path,
) -> None:
    # As an admin without the command would: install.yaml (what hack/release.sh writes with
    # `pivoter install --dry-run`), applied with kubectl; then `pivoter check` says it works.
    exported = cli(
        node_cluster,
        "install",
        "--dry-run",
        "--image",
        built_image.pushed,
        "--olmv1-apis",
        "--registries-conf",
        str(registries_conf),
    )
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "install.yaml").write_text(exported.stdout)
    kubectl(node_cluster, "apply", "--server-side", "-f", str(tmp_path / "install.yaml"))
    wait_for(lambda: _daemon_ready(kube, built_image.pushed), timeout=300, what="pivoter ready")
    _catalog_config_map(node_cluster, catalog)
    kubectl(node_cluster, "apply", "-f", str(STATE["backup"]))
    _wait_installed(kube, "every input installed again")
    time.sleep(10)
    assert _workloads(kube) == STATE["workloads"], "an object was re-created or a pod restarted"
    check = cli(node_cluster, "check", "-o", "json")
    assert check.returncode == 0, check.stdout
    statuses = {f["check"]: f["status"] for f in json.loads(check.stdout)}
    assert statuses["webhook"] == "ok", check.stdout
    assert statuses["leader"] == "ok", check.stdout
    assert statuses["verification"] == "ok", check.stdout  # off: no policy here
