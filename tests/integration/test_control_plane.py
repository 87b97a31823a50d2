"""The local control plane is a real Kubernetes: CRDs, server-side apply, watches, garbage
collection, scheduling on simulated nodes, etcd compaction (410 Gone), RBAC and service-account
tokens all behave as in a production cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests import manifests
from tests.cluster import (
    ClusterConfig,
    ClusterError,
    LocalCluster,
    TestCluster,
    clear_stale,
    raw_request,
    running_components,
    session_labels,
    unique_name,
    wait_for,
)
from tests.tools import tool

pytestmark = pytest.mark.cluster

APPLY = "application/apply-patch+yaml"
REPO = Path(__file__).resolve().parents[2]


def _apply(
    api: client.ApiClient, path: str, body: dict[str, Any], manager: str, *, force: bool = False
) -> dict[str, Any]:
    """Server-side apply ``body`` at ``path`` as field manager ``manager``."""
    query = [("fieldManager", manager)] + ([("force", "true")] if force else [])
    result: dict[str, Any] = raw_request(
        api, "PATCH", path, query=query, body=body, content_type=APPLY
    )
    return result


def _crd(group: str) -> dict[str, Any]:
    size_and_color = {
        "size": {"type": "integer", "minimum": 1},
        "color": {"type": "string"},
    }
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": size_and_color}},
    }
    version = manifests.crd_version(schema=schema)
    return manifests.crd(group, versions=[version], labels=session_labels())


def test_crd_is_established_and_serves_custom_objects(cluster: TestCluster, namespace: str) -> None:
    api = cluster.api_client()
    group = f"{unique_name('g')}.pivoter.test"
    extensions = client.ApiextensionsV1Api(api)
    extensions.create_custom_resource_definition(_crd(group))

    def established() -> bool:
        crd = extensions.read_custom_resource_definition(f"widgets.{group}")
        conditions = crd.status.conditions or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    wait_for(established, timeout=30, what="CRD Established")

    custom = client.CustomObjectsApi(api)
    path = f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1"
    created = _apply(
        api,
        path,
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"size": 1},
        },
        "alice",
    )
    assert created["spec"] == {"size": 1}

    # A second manager owning a different field merges; the first manager's field stays.
    _apply(
        api,
        path,
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"color": "red"},
        },
        "bob",
    )
    merged = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w1")
    assert merged["spec"] == {"size": 1, "color": "red"}
    managers = {m["manager"] for m in merged["metadata"]["managedFields"]}
    assert managers == {"alice", "bob"}

    # The structural schema is enforced by the real apiserver.
    with pytest.raises(ApiException) as invalid:
        _apply(
            api,
            f"/apis/{group}/v1/namespaces/{namespace}/widgets/w2",
            {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": "w2"},
                "spec": {"size": 0},
            },
            "alice",
        )
    assert invalid.value.status == 422


def test_server_side_apply_conflicts_and_watch_sees_changes(
    cluster: TestCluster, namespace: str
) -> None:
    api = cluster.api_client()
    core = client.CoreV1Api(api)
    path = f"/api/v1/namespaces/{namespace}/configmaps/settings"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"mode": "a"},
    }
    first = _apply(api, path, body, "owner")
    start_rv = first["metadata"]["resourceVersion"]

    # Another manager changing an owned field conflicts unless it forces.
    with pytest.raises(ApiException) as conflict:
        _apply(api, path, {**body, "data": {"mode": "b"}}, "intruder")
    assert conflict.value.status == 409
    _apply(api, path, {**body, "data": {"mode": "c"}}, "intruder", force=True)

    events = []
    stream = watch.Watch()
    for event in stream.stream(
        core.list_namespaced_config_map, namespace, resource_version=start_rv, timeout_seconds=20
    ):
        obj = event["object"]
        if obj.metadata.name == "settings":
            events.append((event["type"], obj.data["mode"]))
            stream.stop()
    assert events == [("MODIFIED", "c")]


def test_owner_references_are_garbage_collected(cluster: TestCluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    parent = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="parent"))
    )
    owner = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="parent", uid=parent.metadata.uid
    )
    core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="child", owner_references=[owner])),
    )
    core.delete_namespaced_config_map("parent", namespace, propagation_policy="Background")

    def child_gone() -> bool:
        try:
            core.read_namespaced_config_map("child", namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(child_gone, timeout=60, what="garbage collection of the dependent ConfigMap")


@pytest.mark.kwok
def test_deployment_becomes_available_on_a_simulated_node(
    cluster: TestCluster, namespace: str
) -> None:
    api = cluster.api_client()
    apps = client.AppsV1Api(api)
    labels = {"app": "web"}
    apps.create_namespaced_deployment(
        namespace,
        client.V1Deployment(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1DeploymentSpec(
                replicas=2,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(
                        containers=[client.V1Container(name="web", image="example.invalid/web:1")]
                    ),
                ),
            ),
        ),
    )

    def available() -> bool:
        status = apps.read_namespaced_deployment("web", namespace).status
        conditions = status.conditions or []
        return (status.available_replicas or 0) == 2 and any(
            c.type == "Available" and c.status == "True" for c in conditions
        )

    wait_for(available, timeout=90, what="Deployment Available")
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 2
    assert {p.status.phase for p in pods} == {"Running"}
    nodes = {p.spec.node_name for p in pods}
    assert nodes == {"kwok-node-0"}


def _raw_watch(api: client.ApiClient, path: str, resource_version: str) -> tuple[int, list[Any]]:
    """Open a watch on ConfigMap ``c`` and return the HTTP status and the first event (the
    apiserver's own bytes)."""
    try:
        response = raw_request(
            api,
            "GET",
            path,
            query=[
                ("watch", "true"),
                ("resourceVersion", resource_version),
                ("timeoutSeconds", "5"),
                # Only the test's ConfigMap: the controller manager adds kube-root-ca.crt to a
                # new namespace when it gets to it, which on a busy machine is after the test's
                # first write (its ADDED event then came first).
                ("fieldSelector", "metadata.name=c"),
            ],
            preload=False,
        )
    except ApiException as exc:
        return exc.status, [json.loads(exc.body)]
    try:
        first_line = next(iter(response.stream(1 << 16)), b"").split(b"\n", 1)[0]
        return response.status, [json.loads(first_line)] if first_line else []
    finally:
        response.release_conn()


def test_watch_from_a_compacted_revision_gets_410(cluster: TestCluster, namespace: str) -> None:
    api = cluster.api_client()
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"n": "0"})
    )
    old_rv = cm.metadata.resource_version
    for n in range(1, 4):
        core.patch_namespaced_config_map("c", namespace, {"data": {"n": str(n)}})
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    # Before compaction the old revision is still watchable.
    status, events = _raw_watch(api, path, old_rv)
    assert status == 200
    assert events[0]["type"] == "MODIFIED"

    revision = cluster.compact_etcd()
    assert revision > int(old_rv)

    status, events = _raw_watch(api, path, old_rv)
    # The real apiserver reports a compacted revision inside the watch stream: an ERROR event
    # carrying a Status with code 410 (reason Expired), which client-go turns into a relist.
    assert status == 200
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] in {"Expired", "Gone"}

    # The kubernetes client surfaces it as ApiException(410).
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=old_rv, timeout_seconds=5
        ):
            pass
    assert gone.value.status == 410

    # Watching from the compaction revision itself still works.
    status, _ = _raw_watch(api, path, str(revision))
    assert status == 200


def test_rbac_denies_a_user_without_rights_until_granted(
    cluster: TestCluster, namespace: str
) -> None:
    user = unique_name("alice")
    kubeconfig = cluster.user_kubeconfig(user, ["pivoter:testers"])
    user_api = cluster.api_client(kubeconfig)

    # The apiserver authenticates the certificate identity exactly as minted.
    review = client.AuthenticationV1Api(user_api).create_self_subject_review(
        client.V1SelfSubjectReview()
    )
    assert review.status.user_info.username == user
    assert "pivoter:testers" in review.status.user_info.groups

    user_core = client.CoreV1Api(user_api)
    with pytest.raises(ApiException) as denied:
        user_core.list_namespaced_config_map(namespace)
    assert denied.value.status == 403

    rbac = client.RbacAuthorizationV1Api(cluster.api_client())
    rbac.create_namespaced_role(
        namespace,
        client.V1Role(
            metadata=client.V1ObjectMeta(name="read-configmaps"),
            rules=[
                client.V1PolicyRule(
                    api_groups=[""], resources=["configmaps"], verbs=["get", "list"]
                )
            ],
        ),
    )
    rbac.create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="testers-read"),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="read-configmaps"
            ),
            subjects=[
                client.RbacV1Subject(
                    kind="Group", name="pivoter:testers", api_group="rbac.authorization.k8s.io"
                )
            ],
        ),
    )
    wait_for(
        lambda: user_core.list_namespaced_config_map(namespace) is not None,
        timeout=10,
        what="RBAC grant to take effect",
    )
    # Only what was granted: writing is still forbidden.
    with pytest.raises(ApiException) as still_denied:
        user_core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
        )
    assert still_denied.value.status == 403


def test_token_request_and_token_review(cluster: TestCluster, namespace: str) -> None:
    api = cluster.api_client()
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot"))
    )
    token_request = core.create_namespaced_service_account_token(
        "robot",
        namespace,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
        ),
    )
    token = token_request.status.token
    assert token.count(".") == 2  # a signed JWT

    review = client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
    )
    assert review.status.authenticated is True
    assert review.status.user.username == f"system:serviceaccount:{namespace}:robot"

    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    rejected = client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=forged))
    )
    assert not rejected.status.authenticated


def test_restarted_apiserver_keeps_its_data(cluster: TestCluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="kept"), data={"k": "v"})
    )
    cluster.restart_apiserver()
    fresh = client.CoreV1Api(cluster.api_client())
    assert fresh.read_namespaced_config_map("kept", namespace).data == {"k": "v"}


# ------------------------------------------------------------------ bad input: clear and quick


def _config(**overrides: Any) -> ClusterConfig:
    return ClusterConfig(binary=tool("kube"), die_with_parent=True, start_timeout=60, **overrides)


def test_a_port_in_use_is_reported_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"port {port} on 127.0.0.1 .* is in use"):
            LocalCluster.start(tmp_path / "c", _config(apiserver_port=port))
    assert not (tmp_path / "c").exists()


def test_a_missing_binary_says_how_to_build_it(tmp_path: Path) -> None:
    config = ClusterConfig(binary=tmp_path / "no-such-kube")
    with pytest.raises(ClusterError, match=r"hack/tools.sh kube"):
        LocalCluster.start(tmp_path / "c", config)


def test_a_component_dying_at_start_shows_its_log_and_stops_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "c"
    config = _config(kwok=False, extra_args={"kube-apiserver": ["--no-such-flag"]})
    with pytest.raises(ClusterError) as failure:
        LocalCluster.start(root, config)
    message = str(failure.value)
    assert "kube-apiserver exited with code" in message
    assert "unknown flag: --no-such-flag" in message
    # etcd had started; it must not outlive the failed start.
    assert running_components(root) == {}


def test_a_running_cluster_is_not_overwritten_but_a_stale_one_is_replaced(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    # A process that looks like one of this cluster's components (its argv names the root).
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(root)])
    try:
        state = {"components": {"etcd": {"pid": holder.pid, "argv": [], "log": ""}}}
        (root / "state.json").write_text(json.dumps(state))
        with pytest.raises(ClusterError, match="already running"):
            clear_stale(root)
    finally:
        holder.kill()
        holder.wait()
    (root / "etcd").mkdir()
    clear_stale(root)  # the recorded process is gone: this is a killed run's leftover
    assert not root.exists()


@pytest.mark.timeout(600)  # cluster-up.sh twice (300 s bound each) and cluster-down.sh
def test_scripts_start_and_stop_a_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "PIVOTER_CLUSTER_DIR": str(tmp_path / "c")}
    up = subprocess.run(
        [str(REPO / "hack/cluster-up.sh"), "--no-kwok"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        assert up.returncode == 0, up.stderr
        kubeconfig = Path(up.stdout.strip())
        assert kubeconfig.is_file()
        nodes = subprocess.run(
            [
                str(tool("kubectl")),
                "--kubeconfig",
                str(kubeconfig),
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.groups}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert nodes.returncode == 0, nodes.stderr
        assert "system:masters" in nodes.stdout

        again = subprocess.run(
            [str(REPO / "hack/cluster-up.sh")],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert again.returncode == 1
        assert "already running" in again.stderr
    finally:
        down = subprocess.run(
            [str(REPO / "hack/cluster-down.sh")],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr
    assert not (tmp_path / "c").exists()
